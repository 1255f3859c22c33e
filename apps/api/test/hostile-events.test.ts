/**
 * Provider events signed as the providers sign them, with odd contents: every event type Timbra
 * handles with objects of the wrong shape, ids that are not ids, amounts and currencies that are not
 * money, metadata of every type; Mercado Pago notifications naming odd payments. A signed event is
 * the provider's word: it is recorded (accepted, ignored, or failed with a reason) and answered 2xx
 * so the provider stops retrying — never 5xx. The provider sandbox answers the API calls they cause.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { MP_SECRET, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true });
});
afterAll(() => api.close());

const TYPES = [
  'payment_intent.succeeded',
  'charge.succeeded',
  'charge.captured',
  'charge.refunded',
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refund.updated',
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'invoice.paid',
  'customer.created',
];

/** Objects of the wrong shape for any of the types above. */
const OBJECTS: unknown[] = [
  {},
  { id: 'pi_odd' },
  { id: 'ch_odd', object: 'charge', captured: true, amount_captured: 'many', currency: 7 },
  { id: 'pi_odd', amount_received: 1e308, currency: 'mxn' },
  { id: 'pi_odd', amount_received: -1, currency: 'mxn' },
  { id: 'pi_odd', amount_received: 100, currency: '' },
  { id: 'pi_odd', amount_received: 100, currency: 'mxn', metadata: 'not an object' },
  { id: 'pi_odd', amount_received: 100, currency: 'mxn', metadata: { rfc: 42, invoice_id: {}, tipo_cambio: 'x' } },
  { id: 'pi_odd', amount_received: 100, currency: 'mxn', metadata: { rfc: 'XAXX010101000', razon_social: '\u0007' } },
  { id: 'pi_odd', amount_received: 100, currency: 'mxn', metadata: { invoice_id: 'not-a-uuid' } },
  { id: 'pi_odd', amount_received: 100, currency: 'mxn', metadata: { payment_terms: 'installments' } },
  { id: ['pi_1'], payment_intent: { id: 42 } },
  { id: 'cs_odd', mode: 'payment', payment_status: 'paid', payment_intent: 'pi_../x' },
  { id: 'in_odd', object: 'invoice' },
  { id: 'x'.repeat(5000) },
  { id: 'pi_\u202e', amount_received: 100, currency: 'mxn' },
  { nested: { deeper: { deepest: Array.from({ length: 50 }, () => ({ a: [1, { b: null }] })) } } },
  'a string',
  [],
  42,
  true,
];

/** A Mercado Pago notification's data.id and type, as a query string would carry them. */
const MP_NOTIFICATIONS: [string, string][] = [
  ['0', 'payment'],
  ['99999999999999999999', 'payment'],
  ['123456789012345678901234', 'payment'],
  ['12a', 'payment'],
  ['-5', 'payment'],
  ['1.5', 'payment'],
  ['4242', 'merchant_order'],
  ['4242', 'plan'],
  ['4242', ''],
  ['4242', 'x'.repeat(300)],
  ['ﾑﾑ', 'payment'],
  ['4242', 'payment\u0007'],
];

const mpSign = (dataId: string, requestId: string) => {
  const ts = Math.floor(Date.now() / 1000);
  const manifest = `id:${dataId.toLowerCase()};request-id:${requestId};ts:${ts};`;
  return `ts=${ts},v1=${createHmac('sha256', MP_SECRET).update(manifest).digest('hex')}`;
};

describe('signed provider events with odd contents', () => {
  const stripeCases = TYPES.flatMap((type) => OBJECTS.map((object, i) => [`${type} #${i}`, type, object] as const));

  it('are several hundred', () => {
    expect(stripeCases.length + MP_NOTIFICATIONS.length).toBeGreaterThanOrEqual(250);
  });

  it.each(stripeCases)('Stripe %s → 2xx, recorded once with its result', async (_name, type, object) => {
    const id = `evt_odd_${randomUUID()}`;
    const delivery = stripeDelivery({
      id,
      object: 'event',
      type,
      created: Math.floor(Date.now() / 1000) - 60,
      data: { object },
    });
    const res = await got.post(`${api.url}/webhooks/stripe`, {
      body: delivery.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
      throwHttpErrors: false,
    });
    expect({ status: res.statusCode, body: res.body.slice(0, 300) }).toMatchObject({ status: 200 });
    const stored = await api.prisma.webhookEvent.findMany({ where: { provider: 'stripe', eventId: id } });
    expect(stored).toHaveLength(1);
    expect(['accepted', 'ignored', 'failed']).toContain(stored[0]!.result);
  });

  it('a notification without a data.id cannot be signed: refused (401), nothing stored', async () => {
    const requestId = `req-odd-${randomUUID()}`;
    const before = await api.prisma.webhookEvent.count();
    const res = await got.post(`${api.url}/webhooks/mercadopago`, {
      json: { data: {} },
      searchParams: { 'data.id': '', type: 'payment' },
      headers: { 'x-signature': mpSign('', requestId), 'x-request-id': requestId },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(401);
    expect(await api.prisma.webhookEvent.count()).toBe(before);
  });

  it.each(MP_NOTIFICATIONS)('Mercado Pago data.id=%j type=%j → 2xx, recorded once', async (dataId, type) => {
    const requestId = `req-odd-${randomUUID()}`;
    const res = await got.post(`${api.url}/webhooks/mercadopago`, {
      json: { data: { id: dataId }, type },
      searchParams: { 'data.id': dataId, type },
      headers: { 'x-signature': mpSign(dataId, requestId), 'x-request-id': requestId },
      throwHttpErrors: false,
    });
    expect({ status: res.statusCode, body: res.body.slice(0, 300) }).toMatchObject({ status: 200 });
    expect(
      await api.prisma.webhookEvent.count({ where: { provider: 'mercadopago', eventId: { endsWith: requestId } } }),
    ).toBe(1);
  });
});
