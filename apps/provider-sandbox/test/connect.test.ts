/**
 * Stripe Connect as the sandbox plays it: a payment made on a connected account is read by the
 * official library only with that account (`stripeAccount`: the `Stripe-Account` header) and its
 * mode's key, and its events name the account and go to the platform's Connect endpoint, signed
 * with that endpoint's secret.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import Stripe from 'stripe';
import { eventually, ProviderSandboxClient } from '@timbra/test-support';
import { ProviderSandbox } from '../src/provider-sandbox.ts';

const KEYS = { test: 'sk_test_connect', live: 'sk_live_connect' };
const SECRETS = { account: 'whsec_account', connect: 'whsec_connect' };

const received: { path: string; signature: string; body: string }[] = [];
let receiver: Server;
let sandbox: ProviderSandbox;
let client: ProviderSandboxClient;
let port: number;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', signature: String(req.headers['stripe-signature']), body });
      res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  sandbox = new ProviderSandbox({
    host: '127.0.0.1',
    port: 0,
    stripe: {
      secretKey: KEYS.test,
      liveSecretKey: KEYS.live,
      webhookUrl: `${hook}/stripe`,
      webhookSecret: SECRETS.account,
      connect: { webhookUrl: `${hook}/connect`, webhookSecret: SECRETS.connect },
    },
    mercadoPago: { accessToken: 'TEST-x', webhookUrl: undefined, webhookSecret: 'mp' },
    banxico: { token: 'bmx-test' },
    retryDelaysMs: [50],
    logger: pino({ level: 'silent' }),
  });
  port = await sandbox.start();
  client = new ProviderSandboxClient(`http://127.0.0.1:${port}`);
});
afterAll(async () => {
  await sandbox.stop();
  await new Promise((r) => receiver.close(r));
});

const stripeWith = (key: string, stripeAccount?: string) =>
  new Stripe(key, {
    host: '127.0.0.1',
    port,
    protocol: 'http',
    maxNetworkRetries: 0,
    ...(stripeAccount ? { stripeAccount } : {}),
  });
const missing = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ statusCode: 404, code: 'resource_missing' });

describe('Stripe Connect', () => {
  it("reads a connected account's live payment with its account and the live key only", async () => {
    const made = await client.stripePayment({ amount: 11600, account: 'acct_1Shop', livemode: true });
    const pi = await stripeWith(KEYS.live, 'acct_1Shop').paymentIntents.retrieve(made.paymentIntent.id, {
      expand: ['latest_charge'],
    });
    expect(pi).toMatchObject({ id: made.paymentIntent.id, livemode: true, amount_received: 11600 });
    const charge = pi.latest_charge as Stripe.Charge;
    await stripeWith(KEYS.live, 'acct_1Shop').balanceTransactions.retrieve(charge.balance_transaction as string);
    // Another account, no account (the platform's own), or the test key: Stripe's 404.
    await missing(stripeWith(KEYS.live, 'acct_1Other').paymentIntents.retrieve(made.paymentIntent.id));
    await missing(stripeWith(KEYS.live).paymentIntents.retrieve(made.paymentIntent.id));
    await missing(stripeWith(KEYS.test, 'acct_1Shop').paymentIntents.retrieve(made.paymentIntent.id));
    // Its refunds are the account's too.
    await client.stripeRefund({ paymentIntent: made.paymentIntent.id, amount: 1000 });
    const listed = await stripeWith(KEYS.live, 'acct_1Shop').refunds.list({ payment_intent: made.paymentIntent.id });
    expect(listed.data).toHaveLength(1);
    expect((await stripeWith(KEYS.live).refunds.list({ payment_intent: made.paymentIntent.id })).data).toEqual([]);
  });

  it('sends its events, naming the account and mode, to the Connect endpoint signed with its secret', async () => {
    const made = await client.stripePayment({ amount: 5800, account: 'acct_1Shop' });
    await eventually(() =>
      Promise.resolve(received.filter((r) => r.body.includes(made.paymentIntent.id)).length === 2),
    );
    const ours = received.filter((r) => r.body.includes(made.paymentIntent.id));
    expect(ours.map((r) => r.path)).toEqual(['/connect', '/connect']);
    const checks = new Stripe(KEYS.test);
    for (const r of ours) {
      const event = checks.webhooks.constructEvent(r.body, r.signature, SECRETS.connect);
      expect(event).toMatchObject({ account: 'acct_1Shop', livemode: false });
      expect(() => checks.webhooks.constructEvent(r.body, r.signature, SECRETS.account)).toThrow();
    }
    // A test payment on the account: the test key reads it.
    await stripeWith(KEYS.test, 'acct_1Shop').paymentIntents.retrieve(made.paymentIntent.id);
    // The platform's own payments still go to its own endpoint.
    const own = await client.stripePayment({ amount: 100 });
    await eventually(() =>
      Promise.resolve(received.some((r) => r.path === '/stripe' && r.body.includes(own.paymentIntent.id))),
    );
  });
});
