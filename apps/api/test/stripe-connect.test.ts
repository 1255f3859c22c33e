import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { apiAnswer, makeOrganizationWithCsd, stripeSignatureHeader } from '@timbra/test-support';
import { KEYS, STRIPE_KEY, startApi, type TestApi } from './helpers.ts';

// Stripe Connect in platform mode: the platform's one Connect endpoint takes every connected
// account's events, signed with its secret, and each reaches the organization that named the
// account — a live event that organization, a test event its test twin — whose API reads the
// account's objects with the platform's key of its mode, as that account. The provider sandbox plays
// Stripe: a connected account's payment is found only with its Stripe-Account header and its mode's
// key, and its events go to the Connect endpoint.

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const CONNECT_SECRET = `whsec_connect_${randomBytes(8).toString('hex')}`;
const LIVE_KEY = `sk_live_${randomBytes(8).toString('hex')}`;
const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
const CACX = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };
const ACCOUNT = 'acct_1XochiltShop';

let api: TestApi;
let live: string;
let liveKey: string;
let testKey: string;
const call = (key: string, method: string, path: string, body?: object) => apiAnswer(api.url, key, method, path, body);
const payments = async (key: string) =>
  ((await call(key, 'GET', '/v1/payments')).body.data as { externalId: string; amount: string }[]).map(
    (p) => `${p.externalId} ${p.amount}`,
  );

beforeAll(async () => {
  api = await startApi({
    platform: { key: PLATFORM_KEY, vault },
    providers: true,
    connect: { webhookSecret: CONNECT_SECRET, liveKey: LIVE_KEY, testKey: STRIPE_KEY },
  });
  live = (await makeOrganizationWithCsd(api.url, PLATFORM_KEY, CACX)).id;
  const twin = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/test`)).body.id as string;
  liveKey = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/keys`, { name: 'pos' })).body.key as string;
  testKey = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${twin}/keys`, { name: 'pos' })).body.key as string;
});
afterAll(async () => {
  await api.close();
});

describe('Stripe Connect (platform mode)', () => {
  it("names an organization's connected account: checked, one organization an account, none for a twin", async () => {
    const path = `/v1/organizations/${live}/providers/stripe`;
    expect((await call(PLATFORM_KEY, 'PUT', path, { account: 'not-an-account' })).code).toBe('validation_failed');
    const named = await call(PLATFORM_KEY, 'PUT', path, { account: ACCOUNT });
    expect(named.status).toBe(200);
    expect(named.body).toMatchObject({ provider: 'stripe', account: ACCOUNT, webhookPath: '/webhooks/stripe/connect' });
    const other = await makeOrganizationWithCsd(api.url, PLATFORM_KEY, {
      rfc: 'TBO0101010A1',
      nombre: 'ORGANIZACION DE PRUEBA',
      regimenFiscal: '601',
      lugarExpedicion: '01000',
    });
    const taken = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${other.id}/providers/stripe`, {
      account: ACCOUNT,
    });
    expect([taken.status, taken.code]).toEqual([409, 'connected_account_taken']);
    const twin = (await call(PLATFORM_KEY, 'GET', `/v1/organizations/${live}`)).body.testOrganization as string;
    const ofTwin = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${twin}/providers/stripe`, { account: ACCOUNT });
    expect([ofTwin.status, ofTwin.code]).toEqual([409, 'organization_is_test']);
    const home = (
      (await call(PLATFORM_KEY, 'GET', '/v1/organizations')).body.data as { id: string; rfc: string }[]
    ).find((o) => o.rfc === 'EKU9003173C9')!.id;
    const ofHome = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${home}/providers/stripe`, {
      account: 'acct_1Home',
    });
    expect([ofHome.status, ofHome.code]).toEqual([409, 'connect_not_configured']);
  });

  it('takes a live event for the organization and a test event for its twin, each read as the account', async () => {
    const liveSale = await api.providers.stripePayment({ amount: 23200, account: ACCOUNT, livemode: true });
    const testSale = await api.providers.stripePayment({ amount: 11600, account: ACCOUNT });
    for (const event of [...liveSale.events, ...testSale.events])
      expect(await api.providers.delivery(event)).toMatchObject({ delivered: true });
    expect(await payments(liveKey)).toEqual([`${liveSale.paymentIntent.id} 232.00`]);
    expect(await payments(testKey)).toEqual([`${testSale.paymentIntent.id} 116.00`]);
    // Nothing for the home organization, whose own Stripe account is STRIPE_*.
    expect(await payments(KEYS.pos)).toEqual([]);

    // A refund's event names only its charge: its refunds are listed from Stripe's API, as the
    // account and with its mode's key (else none is found, and no Egreso is made).
    for (const sale of [liveSale, testSale]) {
      const refund = await api.providers.stripeRefund({ paymentIntent: sale.paymentIntent.id, amount: 1000 });
      for (const event of refund.events) expect(await api.providers.delivery(event)).toMatchObject({ delivered: true });
    }
    const kinds = async (key: string) =>
      ((await call(key, 'GET', '/v1/invoices')).body.data as { kind: string }[]).map((i) => i.kind).sort();
    expect(await kinds(liveKey)).toEqual(['E', 'I']);
    expect(await kinds(testKey)).toEqual(['E', 'I']);
  });

  it('answers 200 ignored for an account no organization named, and 401 to a bad signature', async () => {
    const stranger = await api.providers.stripePayment({ amount: 5800, account: 'acct_1Stranger', livemode: true });
    for (const event of stranger.events) expect(await api.providers.delivery(event)).toMatchObject({ delivered: true });
    const body = JSON.stringify({
      id: 'evt_forged',
      type: 'payment_intent.succeeded',
      account: ACCOUNT,
      livemode: true,
    });
    const forged = await fetch(`${api.url}/webhooks/stripe/connect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignatureHeader(body, 'whsec_wrong') },
      body,
    });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('invalid_signature');
    expect(await payments(liveKey)).toHaveLength(1);
  });
});
