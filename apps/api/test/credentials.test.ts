/** A credential in the query string: refused (400), and never written to the logs. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, startApi, type TestApi } from './helpers.ts';

const logs: string[] = [];
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ logs });
});
afterAll(() => api.close());

describe('credentials in the query string', () => {
  it.each(['api_key', 'apiKey', 'key', 'token', 'access_token', 'Authorization'])(
    '?%s=<key> → 400 credentials_in_query, and the key is in no log line',
    async (name) => {
      const res = await got.get(`${api.url}/v1/payments?limit=1&${name}=${KEYS.pos}`, { throwHttpErrors: false });
      expect(res.statusCode).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'credentials_in_query' } });
      // Even with a valid header the URL credential is refused: it has leaked already.
      const withHeader = await got.get(`${api.url}/v1/payments?${name}=${KEYS.pos}`, {
        headers: { authorization: `Bearer ${KEYS.pos}` },
        throwHttpErrors: false,
      });
      expect(withHeader.statusCode).toBe(400);
      // The API logs its requests (a request in the same run proves the capture works).
      await got.get(`${api.url}/v1/payments?limit=1`, { headers: { authorization: `Bearer ${KEYS.pos}` } });
      expect(logs.some((l) => l.includes('/v1/payments?limit=1'))).toBe(true);
      expect(logs.filter((l) => l.includes(KEYS.pos))).toEqual([]);
    },
  );

  it('other query parameters are fine (Mercado Pago notifications carry data.id and type)', async () => {
    const res = await got.get(`${api.url}/v1/payments?limit=1`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('request logs', () => {
  it('one lean line per request: route, key name, status, duration, the error code of a refusal, the id it was about', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    await got.get(`${api.url}/v1/payments/${id}`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
    });
    const line = logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => (l.req as { url?: string })?.url === `/v1/payments/${id}`);
    expect(line).toMatchObject({
      req: { method: 'GET', url: `/v1/payments/${id}` },
      res: { statusCode: 404 },
      route: '/payments/:id',
      key: 'pos',
      code: 'not_found',
      paymentId: id,
    });
    expect(typeof line!.responseTime).toBe('number');
    expect(JSON.stringify(line).length).toBeLessThan(500);
    expect(JSON.stringify(line)).not.toMatch(/content-security-policy|authorization/i);
  });
});
