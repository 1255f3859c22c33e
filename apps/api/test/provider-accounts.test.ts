import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import got from 'got';
import pg from 'pg';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { testCsdFiles } from '@timbra/test-support';
import {
  MP_SECRET,
  MP_TOKEN,
  STRIPE_KEY,
  STRIPE_SECRET,
  mpSign,
  startApi,
  stripeDelivery,
  type TestApi,
} from './helpers.ts';

// Platform mode: an organization's own Stripe and Mercado Pago accounts. The platform key stores
// each account's webhook secret and API key (sealed); the provider sends the organization's events
// to its own path, signed with its own secret, and the organization's API reads the provider's
// objects with its own key. The provider sandbox plays the organization's account: its events are
// held, then sent to the organization's path signed as the provider signs them.

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
const CACX = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };
const ORG_STRIPE_SECRET = `whsec_org_${randomBytes(16).toString('hex')}`;
const ORG_MP_SECRET = `mp-org-${randomBytes(16).toString('hex')}`;

let api: TestApi;
let id: string;
let orgKey: string;

const call = async (key: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: object) => {
  const res = await got(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() },
    ...(body ? { json: body } : {}),
    throwHttpErrors: false,
  });
  const text = res.body;
  const answer = (text ? JSON.parse(text) : {}) as Record<string, unknown> & { error?: { code: string } };
  return { status: res.statusCode, body: answer, text, code: answer.error?.code };
};
const post = (path: string, delivery: { body: string; signature: string }) =>
  got.post(`${api.url}${path}`, {
    body: delivery.body,
    headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
    throwHttpErrors: false,
  });
const paymentsWith = async (key: string, externalId: string) =>
  (await call(key, 'GET', `/v1/payments?externalId=${encodeURIComponent(externalId)}`)).body.data as {
    id: string;
    invoices: { id: string }[];
  }[];

beforeAll(async () => {
  api = await startApi({ platform: { key: PLATFORM_KEY, vault }, providers: true });
  id = (await call(PLATFORM_KEY, 'POST', '/v1/organizations', CACX)).body.id as string;
  const f = testCsdFiles('CACX7605101P8');
  await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, {
    certificate: Buffer.from(f.cer).toString('base64'),
    privateKey: Buffer.from(f.key).toString('base64'),
    password: f.password,
  });
  orgKey = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/keys`, { name: 'pos' })).body.key as string;
});
afterAll(async () => {
  await api.close();
});

describe("an organization's own provider accounts", () => {
  it('stores an account sealed: the answer names its webhook path, never its secrets', async () => {
    const bad = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${id}/providers/paypal`, {
      webhookSecret: ORG_STRIPE_SECRET,
      apiKey: STRIPE_KEY,
    });
    expect([bad.status, bad.code]).toEqual([404, 'not_found']);
    const short = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${id}/providers/stripe`, { webhookSecret: 'x' });
    expect([short.status, short.code]).toEqual([422, 'validation_failed']);
    const theirs = await call(orgKey, 'PUT', `/v1/organizations/${id}/providers/stripe`, {
      webhookSecret: ORG_STRIPE_SECRET,
      apiKey: STRIPE_KEY,
    });
    expect(theirs.status).toBe(401);

    // First with a key Stripe does not know (below: its events then cannot be read).
    const saved = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${id}/providers/stripe`, {
      webhookSecret: ORG_STRIPE_SECRET,
      apiKey: 'sk_test_not_this_accounts_key',
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({ provider: 'stripe', webhookPath: `/webhooks/stripe/${id}` });
    const shown = await call(PLATFORM_KEY, 'GET', `/v1/organizations/${id}`);
    expect(shown.body.providers).toEqual([saved.body]);
    for (const text of [saved.text, shown.text]) {
      expect(text).not.toContain(ORG_STRIPE_SECRET);
      expect(text).not.toContain('sk_test_not_this_accounts_key');
    }
    // In the database: sealed, not in the clear.
    const owner = new pg.Client({ connectionString: api.db.url });
    await owner.connect();
    const { rows } = await owner.query<{ sealed: string }>('SELECT sealed::text FROM provider_accounts');
    await owner.end();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.sealed).not.toContain(ORG_STRIPE_SECRET);
    expect(rows[0]!.sealed).not.toContain('sk_test_not');
  });

  it("takes the organization's Stripe events at its path, checked with its secret, read with its key", async () => {
    const made = await api.providers.stripePayment({ amount: 23200, deliver: 'hold' });
    // The PaymentIntent as Stripe's API has it, in the event Stripe would send.
    const pi = await got(`${api.providers.url}/v1/payment_intents/${made.paymentIntent.id}`, {
      headers: { authorization: `Bearer ${STRIPE_KEY}` },
    }).json<object>();
    const event = {
      id: `evt_org_${randomBytes(6).toString('hex')}`,
      object: 'event',
      type: 'payment_intent.succeeded',
      created: Math.floor(Date.now() / 1000) - 30,
      data: { object: pi },
    };
    const path = `/webhooks/stripe/${id}`;
    // Each secret opens its own path only.
    expect((await post(path, stripeDelivery(event, { secret: STRIPE_SECRET }))).statusCode).toBe(401);
    expect((await post('/webhooks/stripe', stripeDelivery(event, { secret: ORG_STRIPE_SECRET }))).statusCode).toBe(401);
    // Signed, but the organization's key is not the account's: Stripe refuses it, nothing is recorded,
    // and the answer asks Stripe to send it again.
    const refused = await post(path, stripeDelivery(event, { secret: ORG_STRIPE_SECRET }));
    expect(refused.statusCode).toBeGreaterThanOrEqual(500);
    expect(await paymentsWith(orgKey, made.paymentIntent.id)).toEqual([]);

    await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${id}/providers/stripe`, {
      webhookSecret: ORG_STRIPE_SECRET,
      apiKey: STRIPE_KEY,
    });
    const taken = await post(path, stripeDelivery(event, { secret: ORG_STRIPE_SECRET }));
    expect(taken.statusCode).toBe(200);
    const [payment] = await paymentsWith(orgKey, made.paymentIntent.id);
    expect(payment).toBeDefined();
    const xml = await got(`${api.url}/v1/invoices/${payment!.invoices[0]!.id}/xml`, {
      headers: { authorization: `Bearer ${orgKey}` },
    }).text();
    expect(xml).toContain(`<cfdi:Emisor Rfc="${CACX.rfc}"`);
    expect(xml).toContain('Total="232.00"');
    // The home organization recorded nothing of it.
    expect(await api.prisma.payment.count({ where: { externalId: made.paymentIntent.id } })).toBe(0);
  });

  it("takes the organization's Mercado Pago notifications, fetching the payment with its access token", async () => {
    const made = await api.providers.mercadoPagoPayment({ amount: 580.5, paymentType: 'debit_card', deliver: 'hold' });
    const dataId = String(made.payment.id);
    const notify = (path: string, secret: string, requestId = randomUUID()) =>
      got.post(`${api.url}${path}`, {
        json: { type: 'payment', data: { id: dataId } },
        searchParams: { 'data.id': dataId, type: 'payment' },
        headers: { 'x-signature': mpSign(dataId, requestId, undefined, secret), 'x-request-id': requestId },
        throwHttpErrors: false,
      });
    const path = `/webhooks/mercadopago/${id}`;
    // Before the organization has an account: not configured (the provider retries).
    expect((await notify(path, ORG_MP_SECRET)).statusCode).toBe(503);
    const saved = await call(PLATFORM_KEY, 'PUT', `/v1/organizations/${id}/providers/mercadopago`, {
      webhookSecret: ORG_MP_SECRET,
      apiKey: MP_TOKEN,
    });
    expect(saved.body).toMatchObject({ webhookPath: path });
    expect((await notify(path, MP_SECRET)).statusCode).toBe(401);
    expect((await notify(path, ORG_MP_SECRET)).statusCode).toBe(200);
    const [payment] = await paymentsWith(orgKey, dataId);
    expect(payment).toBeDefined();
    expect(await api.prisma.payment.count({ where: { externalId: dataId } })).toBe(0);

    // Forgotten: its notifications are no longer taken.
    expect((await call(PLATFORM_KEY, 'DELETE', `/v1/organizations/${id}/providers/mercadopago`)).status).toBe(204);
    expect((await notify(path, ORG_MP_SECRET)).statusCode).toBe(503);
    expect((await call(PLATFORM_KEY, 'DELETE', `/v1/organizations/${id}/providers/mercadopago`)).code).toBe(
      'not_found',
    );
  });

  it('answers 404 for an organization that does not exist', async () => {
    const res = await post(`/webhooks/stripe/${randomUUID()}`, stripeDelivery({ id: 'evt_x' }));
    expect(res.statusCode).toBe(404);
  });
});
