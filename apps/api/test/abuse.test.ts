/**
 * Failed authentication is limited per address and per key prefix; a flood of forged webhooks is
 * refused (429) while correctly signed deliveries keep being recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ authFailures: { perAddress: 20, perPrefix: 5 } });
});
afterAll(() => api.close());

// Every request here comes from 127.0.0.1 (X-Forwarded-For is ignored: TRUST_PROXY=false); what
// differs between the tests is the key prefix presented. No retries: a 429 is what is measured.
const as = (key: string) =>
  got.get(`${api.url}/v1/payments?limit=1`, {
    headers: { authorization: `Bearer ${key}` },
    throwHttpErrors: false,
    retry: { limit: 0 },
  });

describe('abuse limits', () => {
  it('guesses with one key prefix: 401 up to the limit, then 429 — and the real key still works', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await as(`${KEYS.pos.slice(0, 8)}guess-${i}-xxxxxxxx`)).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    expect((await as(KEYS.pos)).statusCode).toBe(200);
  });

  it('during a flood of forged Stripe webhooks, signed deliveries are recorded; the forgeries get 429', async () => {
    const forged = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        got.post(`${api.url}/webhooks/stripe`, {
          body: JSON.stringify({ id: `evt_forged_${i}` }),
          headers: { 'content-type': 'application/json', 'stripe-signature': `t=1,v1=${'0'.repeat(64)}` },
          throwHttpErrors: false,
          retry: { limit: 0 },
        }),
      ),
    );
    expect(forged.filter((r) => r.statusCode === 429).length).toBeGreaterThan(0);
    expect(forged.every((r) => r.statusCode === 401 || r.statusCode === 429)).toBe(true);
    const real = paymentIntentSucceeded();
    const d = stripeDelivery(real);
    const delivered = await got.post(`${api.url}/webhooks/stripe`, {
      body: d.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': d.signature },
      throwHttpErrors: false,
    });
    expect(delivered.statusCode).toBe(200);
    expect(await api.prisma.payment.count({ where: { externalId: real.data.object.id } })).toBe(1);
  });

  it('an address over its failure limit is refused on every /v1 request, a valid key included', async () => {
    // The forgeries above and these guesses come from 127.0.0.1: past 20 failures in the minute.
    for (let i = 0; i < 25; i++) await as(`other-prefix-${i}-0123456789`);
    const res = await as(KEYS.admin);
    expect(res.statusCode).toBe(429);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'rate_limited' } });
  });
});
