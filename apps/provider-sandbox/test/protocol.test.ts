/**
 * The sandbox as Timbra sees it: the official `stripe` and `mercadopago` libraries against its API,
 * and its webhooks checked with the providers' own signature checks, received by a real HTTP server.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MercadoPagoConfig, Payment, WebhookSignatureValidator } from 'mercadopago';
import { AppConfig } from 'mercadopago/dist/utils/config/index.js';
import { pino } from 'pino';
import Stripe from 'stripe';
import { eventually, ProviderSandboxClient } from '@timbra/test-support';
import { ProviderSandbox } from '../src/provider-sandbox.ts';

const SECRETS = {
  stripeKey: 'sk_test_protocol',
  whsec: 'whsec_protocol',
  mpToken: 'TEST-protocol',
  mpSecret: 'mp_protocol',
};

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
const received: Received[] = [];
/** How the receiver answers the next requests (then 200). */
const answers: number[] = [];

let receiver: Server;
let sandbox: ProviderSandbox;
let client: ProviderSandboxClient;
let stripe: Stripe;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(answers.shift() ?? 200).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  sandbox = new ProviderSandbox({
    host: '127.0.0.1',
    port: 0,
    stripe: { secretKey: SECRETS.stripeKey, webhookUrl: `${hook}/stripe`, webhookSecret: SECRETS.whsec },
    mercadoPago: { accessToken: SECRETS.mpToken, webhookUrl: `${hook}/mp`, webhookSecret: SECRETS.mpSecret },
    banxico: { token: 'bmx-test' },
    retryDelaysMs: [50, 100],
    logger: pino({ level: 'silent' }),
  });
  const port = await sandbox.start();
  client = new ProviderSandboxClient(`http://127.0.0.1:${port}`);
  stripe = new Stripe(SECRETS.stripeKey, { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 });
  (AppConfig as { BASE_URL: string }).BASE_URL = `http://127.0.0.1:${port}/mercadopago`;
});
afterAll(async () => {
  await sandbox.stop();
  await new Promise((r) => receiver.close(r));
});

const eventsOf = (ids: string[]) =>
  ids.map((id) => {
    const r = received.findLast((x) => x.path === '/stripe' && (JSON.parse(x.body) as { id: string }).id === id)!;
    return stripe.webhooks.constructEvent(r.body, String(r.headers['stripe-signature']), SECRETS.whsec);
  });

describe('Stripe', () => {
  it('serves charges, payment intents and refunds to the official library', async () => {
    const made = await client.stripePayment({ amount: 116000, method: 'card_debit', metadata: { rfc: 'X' } });
    const pi = await stripe.paymentIntents.retrieve(made.paymentIntent.id, { expand: ['latest_charge'] });
    expect(pi).toMatchObject({ id: made.paymentIntent.id, status: 'succeeded', amount_received: 116000 });
    const charge = pi.latest_charge as Stripe.Charge;
    expect(charge.payment_method_details?.card?.funding).toBe('debit');
    const refund = await client.stripeRefund({ paymentIntent: pi.id, amount: 1000 });
    await client.stripeRefund({ charge: charge.id, amount: 2000 });
    const listed: Stripe.Refund[] = [];
    for await (const r of stripe.refunds.list({ charge: charge.id, limit: 1 })) listed.push(r);
    expect(listed.map((r) => r.amount).sort()).toEqual([1000, 2000]);
    expect((await stripe.refunds.retrieve(refund.refund.id)).status).toBe('succeeded');
    expect((await stripe.charges.retrieve(charge.id)).amount_refunded).toBe(3000);
  });

  it('answers GET /healthz without credentials (container healthchecks)', async () => {
    const res = await fetch(`${client.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('answers errors as Stripe does: a wrong key, an unknown object', async () => {
    const wrong = new Stripe('sk_test_wrong', {
      host: '127.0.0.1',
      port: Number(new URL(client.url).port),
      protocol: 'http',
    });
    await expect(wrong.charges.retrieve('ch_1')).rejects.toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    await expect(stripe.charges.retrieve('ch_none')).rejects.toMatchObject({
      statusCode: 404,
      code: 'resource_missing',
    });
  });

  it('sends events signed with the endpoint secret, of the library’s API version, in Stripe’s order', async () => {
    const made = await client.stripePayment({ amount: 5000, capture: 'manual' });
    const [succeeded, capturable] = eventsOf(made.events);
    expect([succeeded!.type, capturable!.type]).toEqual([
      'charge.succeeded',
      'payment_intent.amount_capturable_updated',
    ]);
    expect(succeeded!.api_version).toBe(Stripe.API_VERSION);
    expect((succeeded!.data.object as Stripe.Charge).captured).toBe(false);
    const captured = await client.capture(made.paymentIntent.id, { amount: 4000 });
    const [chargeCaptured, piSucceeded] = eventsOf(captured.events);
    expect(chargeCaptured!.type).toBe('charge.captured');
    expect((chargeCaptured!.data.object as Stripe.Charge).amount_captured).toBe(4000);
    expect((piSucceeded!.data.object as Stripe.PaymentIntent).amount_received).toBe(4000);
    const refund = await client.stripeRefund({ paymentIntent: made.paymentIntent.id });
    const [created, refunded] = eventsOf(refund.events);
    expect([created!.type, refunded!.type]).toEqual(['refund.created', 'charge.refunded']);
    expect((refunded!.data.object as Stripe.Charge).refunds).toBeUndefined();
    const failed = await client.updateStripeRefund(refund.refund.id, 'failed');
    expect(eventsOf(failed.events).map((e) => e.type)).toEqual([
      'refund.updated',
      'charge.refund.updated',
      'refund.failed',
    ]);
  });

  it('retries a delivery answered 5xx, with a fresh signature; holds events until asked', async () => {
    const made = await client.stripePayment({ amount: 1000, deliver: 'hold' });
    answers.push(500, 503);
    await client.deliver(made.events[0]!);
    await eventually(async () => (await client.delivery(made.events[0]!)).delivered);
    const record = await client.delivery(made.events[0]!);
    expect(record.attempts.map((a) => a.status)).toEqual([500, 503, 200]);

    const held = await client.stripePayment({ amount: 1000, deliver: 'hold' });
    expect((await client.delivery(held.events[1]!)).attempts).toEqual([]);
    await client.deliver(held.events[1]!);
    await client.deliver(held.events[1]!);
    expect((await client.delivery(held.events[1]!)).attempts.map((a) => a.status)).toEqual([200, 200]);
  });
});

describe('Mercado Pago', () => {
  it('serves payments to the official SDK and notifies with ids only, signed per the documented manifest', async () => {
    const made = await client.mercadoPagoPayment({ amount: 580.5, paymentType: 'debit_card', metadata: { rfc: 'X' } });
    const payment = await new Payment(new MercadoPagoConfig({ accessToken: SECRETS.mpToken })).get({
      id: made.payment.id,
    });
    expect(payment).toMatchObject({ status: 'approved', transaction_amount: 580.5, payment_type_id: 'debit_card' });
    const note = received.findLast((r) => r.path.startsWith('/mp?'))!;
    const url = new URL(note.path, 'http://x');
    expect(url.searchParams.get('data.id')).toBe(String(made.payment.id));
    expect(JSON.parse(note.body)).toEqual(
      expect.objectContaining({ type: 'payment', data: { id: String(made.payment.id) } }),
    );
    expect(note.body).not.toContain('580.5');
    expect(() =>
      WebhookSignatureValidator.validate({
        xSignature: note.headers['x-signature'],
        xRequestId: note.headers['x-request-id'],
        dataId: url.searchParams.get('data.id'),
        secret: SECRETS.mpSecret,
        toleranceSeconds: 300,
      }),
    ).not.toThrow();
  });

  it('refuses a wrong token; refunds show on the payment', async () => {
    const made = await client.mercadoPagoPayment({ amount: 100 });
    await expect(
      new Payment(new MercadoPagoConfig({ accessToken: 'TEST-wrong' })).get({
        id: made.payment.id,
        requestOptions: { maxRetries: 0 },
      }),
    ).rejects.toMatchObject({ status: 401 });
    await client.mercadoPagoRefund(made.payment.id, { amount: 40 });
    const payment = await new Payment(new MercadoPagoConfig({ accessToken: SECRETS.mpToken })).get({
      id: made.payment.id,
    });
    expect(payment.status).toBe('partially_refunded');
    expect(payment.refunds?.map((r) => [r.amount, r.status])).toEqual([[40, 'approved']]);
  });
});
