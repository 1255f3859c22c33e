/**
 * The database failing a request (its connection terminated as Postgres does when it shuts down):
 * 503 database_unavailable with Retry-After, the reason in the log and not in the body, nothing
 * half-written — the same request sent again with its Idempotency-Key is recorded once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import pg from 'pg';
import { KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
const logs: string[] = [];
beforeAll(async () => {
  api = await startApi({ logs });
});
afterAll(() => api.close());

const recent = () => new Date(Date.now() - 60_000).toISOString();
const post = (body: unknown, key: string) =>
  got.post(`${api.url}/v1/payments`, {
    json: body,
    headers: { authorization: `Bearer ${KEYS.pos}`, 'idempotency-key': key },
    throwHttpErrors: false,
    responseType: 'json',
    retry: { limit: 0 },
  });

/**
 * Runs `request` while the payments table is locked by another session, and terminates the API's
 * backend once it waits on that lock (as a shutting-down Postgres terminates it: 57P01).
 */
async function withBackendTerminated<T>(request: () => Promise<T>): Promise<T> {
  const locker = new pg.Client({ connectionString: api.db.url });
  // Watched from a session of its own: a transaction sees pg_stat_activity as it was at its first look.
  const watcher = new pg.Client({ connectionString: api.db.url });
  await Promise.all([locker.connect(), watcher.connect()]);
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE payments IN ACCESS EXCLUSIVE MODE');
    const answer = request();
    let waiting: number[] = [];
    for (let i = 0; i < 200 && waiting.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      const { rows } = await watcher.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      waiting = rows.map((r) => r.pid);
    }
    expect(waiting.length).toBeGreaterThan(0);
    for (const pid of waiting) await watcher.query('SELECT pg_terminate_backend($1)', [pid]);
    const result = await answer;
    await locker.query('ROLLBACK');
    return result;
  } finally {
    await Promise.all([locker.end(), watcher.end()]);
  }
}

describe('the database failing a request', () => {
  it('answers 503 database_unavailable with Retry-After; the retry with the same key records it once', async () => {
    const body = { externalId: 'DB-1', amount: '116.00', currency: 'MXN', occurredAt: recent() };
    const failed = await withBackendTerminated(() => post(body, 'db-unavailable-1'));
    expect(failed.statusCode).toBe(503);
    expect(failed.headers['retry-after']).toBe('5');
    const error = (failed.body as { error: { type: string; code: string; message: string } }).error;
    expect(error).toMatchObject({ type: 'api_error', code: 'database_unavailable' });
    // What Postgres said stays in the log.
    expect(JSON.stringify(failed.body)).not.toMatch(/terminat|57P01|administrator/i);
    const warned = logs.map((l) => JSON.parse(l) as { level: number; trouble?: string; msg: string });
    expect(warned).toContainEqual(expect.objectContaining({ level: 40, trouble: 'restarting' }));
    expect(warned.some((l) => l.level >= 50)).toBe(false);

    // Nothing of it was written; sent again, it is recorded, once.
    expect(await api.prisma.payment.count({ where: { externalId: 'DB-1' } })).toBe(0);
    const retried = await post(body, 'db-unavailable-1');
    expect(retried.statusCode).toBe(201);
    expect((await post(body, 'db-unavailable-1')).headers['idempotent-replayed']).toBe('true');
    expect(await api.prisma.payment.count({ where: { externalId: 'DB-1' } })).toBe(1);
  });

  it('a read fails the same way, and the next one is served', async () => {
    const read = () =>
      got.get(`${api.url}/v1/payments?limit=1`, {
        headers: { authorization: `Bearer ${KEYS.pos}` },
        throwHttpErrors: false,
        retry: { limit: 0 },
      });
    const failed = await withBackendTerminated(read);
    expect(failed.statusCode).toBe(503);
    expect(JSON.parse(failed.body)).toMatchObject({ error: { code: 'database_unavailable' } });
    expect((await read()).statusCode).toBe(200);
  });
});
