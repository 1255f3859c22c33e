import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { markMigrationsRolledBack } from '@timbra/db/testing';
import { startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

describe('health, readiness, metrics', () => {
  it('is alive and ready when Postgres, migrations and Redis are', async () => {
    expect(await got.get(`${api.url}/healthz`).json()).toEqual({ ok: true });
    expect(await got.get(`${api.url}/readyz`).json()).toEqual({
      ok: true,
      checks: { postgres: 'ok', migrations: 'ok', redis: 'ok' },
    });
  });

  it('is not ready when a migration is missing', async () => {
    await markMigrationsRolledBack(api.db.url);
    // The readiness check caches the migration state for 10 s: a fresh API sees the change at once.
    const fresh = await startApi();
    try {
      await markMigrationsRolledBack(fresh.db.url);
      const res = await got.get(`${fresh.url}/readyz`, { throwHttpErrors: false });
      expect(res.statusCode).toBe(503);
      expect(JSON.parse(res.body)).toMatchObject({ ok: false, checks: { migrations: 'pending' } });
    } finally {
      await fresh.close();
    }
  });

  it('exposes Prometheus metrics on their own listener, not on the API port', async () => {
    const text = await got.get(api.metricsUrl).text();
    expect(text).toContain('timbra_http_request_duration_seconds');
    expect(text).toContain('process_cpu_seconds_total');
    expect((await got.get(`${api.url}/metrics`, { throwHttpErrors: false })).statusCode).toBe(404);
    expect((await got.get(api.metricsUrl.replace('/metrics', '/'), { throwHttpErrors: false })).statusCode).toBe(404);
  });
});

describe('rate limit', () => {
  it('answers 429 rate_limited past the per-minute limit of an API key', async () => {
    const limited = await startApi({ rateLimitPerMinute: 3 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await got.get(`${limited.url}/v1/payments`, {
          headers: { authorization: 'Bearer pos-key-0123456789abcdef' },
          throwHttpErrors: false,
          retry: { limit: 0 },
        });
        statuses.push(res.statusCode);
        if (res.statusCode === 429) expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'rate_limited' } });
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});
