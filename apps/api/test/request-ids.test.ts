/**
 * Every payment request — a provider's webhook or a REST call — gets a request id: the caller's
 * X-Request-Id when it sends a sane one, else one of ours; echoed in the answer and in every log line
 * about what the request recorded (the request's own line and the alerts it raised).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

const logs: string[] = [];
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ logs });
});
afterAll(() => api.close());

const linesWith = (id: string) =>
  logs.filter((l) => l.includes(id)).map((l) => JSON.parse(l) as Record<string, unknown>);

describe('request ids', () => {
  it("a Stripe webhook: the answer's body and header carry the id, and so does the alert it raised", async () => {
    // A customer whose régimen breaks CFDI40161 (605 may not use G03): the money is recorded, the
    // invoice needs data, and the API says so in a log line — naming the request that brought it.
    const event = paymentIntentSucceeded({
      metadata: {
        rfc: 'CACX7605101P8',
        razon_social: 'XOCHILT CASAS CHAVEZ',
        regimen_fiscal: '605',
        codigo_postal: '36257',
        uso_cfdi: 'G03',
      },
    });
    const delivery = stripeDelivery(event);
    const requestId = `stripe-${randomUUID()}`;
    const res = await got.post(`${api.url}/webhooks/stripe`, {
      body: delivery.body,
      headers: {
        'content-type': 'application/json',
        'stripe-signature': delivery.signature,
        'x-request-id': requestId,
      },
      throwHttpErrors: false,
    });
    // Hand-signed: this API's Stripe client has no sandbox here, so the event carries what it needs.
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe(requestId);
    expect(JSON.parse(res.body)).toMatchObject({ received: true, requestId });
    const lines = linesWith(requestId);
    expect(lines.some((l) => l.alert === 'invoice_needs_data' && l.requestId === requestId)).toBe(true);
    expect(lines.some((l) => (l.req as { url?: string } | undefined)?.url === '/webhooks/stripe')).toBe(true);
  });

  it('a REST payment: our own id when none is given, in the header and in the request log line with the payment', async () => {
    const res = await got.post(`${api.url}/v1/payments`, {
      json: {
        externalId: `R-${randomUUID()}`,
        amount: '116.00',
        currency: 'MXN',
        occurredAt: new Date().toISOString(),
      },
      headers: { authorization: `Bearer ${KEYS.pos}`, 'idempotency-key': randomUUID() },
      responseType: 'json',
    });
    const requestId = res.headers['x-request-id'] as string;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const paymentId = (res.body as { id: string }).id;
    const line = linesWith(requestId).find((l) => (l.req as { url?: string } | undefined)?.url === '/v1/payments');
    expect(line).toMatchObject({ paymentId, requestId, route: '/payments', key: 'pos' });
    // Each key once in a line (JSON.parse keeps the last of two: read the text). Once requestId twice.
    for (const text of logs.filter((l) => l.includes(requestId))) expect(text.split('"requestId"').length - 1).toBe(1);
  });

  it('an id that is not sane (too long, odd characters) is replaced by ours', async () => {
    const res = await got.get(`${api.url}/healthz`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
