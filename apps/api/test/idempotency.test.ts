/** @clock an Idempotency-Key's expiry */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import pg from 'pg';
import { KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const recent = () => new Date(Date.now() - 60_000).toISOString();
const post = (body: unknown, key: string | undefined, apiKey = KEYS.pos) =>
  got.post(`${api.url}/v1/payments`, {
    json: body,
    headers: { authorization: `Bearer ${apiKey}`, ...(key !== undefined ? { 'idempotency-key': key } : {}) },
    throwHttpErrors: false,
    responseType: 'json',
  });
const code = (res: { body: unknown }) => (res.body as { error?: { code: string } }).error?.code;

describe('Idempotency-Key', () => {
  it('replays the stored response for the same key and body: same ids, same folio, marked as replayed', async () => {
    const body = { externalId: 'I-1', amount: '20.00', currency: 'MXN', occurredAt: recent() };
    const first = await post(body, 'key-1');
    const second = await post(body, 'key-1');
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body).toEqual(first.body);
    expect(await api.prisma.payment.count({ where: { externalId: 'I-1' } })).toBe(1);
  });

  it('refuses the same key with another body (409 idempotency_key_reused)', async () => {
    const body = { externalId: 'I-2', amount: '20.00', currency: 'MXN', occurredAt: recent() };
    await post(body, 'key-2');
    const other = await post({ ...body, amount: '21.00' }, 'key-2');
    expect(other.statusCode).toBe(409);
    expect(code(other)).toBe('idempotency_key_reused');
  });

  it('answers 409 idempotency_key_in_use with Retry-After while the first request is in flight', async () => {
    // Hold the key's advisory lock as an in-flight request would.
    const client = new pg.Client({ connectionString: api.db.url });
    await client.connect();
    const apiClient = await api.prisma.apiClient.findFirstOrThrow({ where: { name: 'pos' } });
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${apiClient.id}:key-3`]);
    const body = { externalId: 'I-3', amount: '20.00', currency: 'MXN', occurredAt: recent() };
    const busy = await post(body, 'key-3');
    expect(busy.statusCode).toBe(409);
    expect(code(busy)).toBe('idempotency_key_in_use');
    expect(busy.headers['retry-after']).toBe('1');
    expect(await api.prisma.payment.count({ where: { externalId: 'I-3' } })).toBe(0);
    await client.query('COMMIT');
    await client.end();
    expect((await post(body, 'key-3')).statusCode).toBe(201);
  });

  it('forgets a key after it expires', async () => {
    const body = { externalId: 'I-4', amount: '20.00', currency: 'MXN', occurredAt: recent() };
    await post(body, 'key-4');
    await api.prisma.idempotencyKey.updateMany({
      where: { key: 'key-4' },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const reused = await post({ ...body, amount: '20.00', description: 'otro' }, 'key-4');
    // A new request under the old key: not a 409; the payment itself is still known (200).
    expect(reused.statusCode).toBe(200);
    expect(reused.headers['idempotent-replayed']).toBeUndefined();
  });

  it('scopes keys to the API client', async () => {
    const body = { externalId: 'I-5', amount: '20.00', currency: 'MXN', occurredAt: recent() };
    const a = await post(body, 'shared-key', KEYS.pos);
    const b = await post({ ...body, amount: '30.00' }, 'shared-key', KEYS.other);
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect((a.body as { id: string }).id).not.toBe((b.body as { id: string }).id);
  });

  it.each([
    ['empty', ''],
    ['too long', 'k'.repeat(256)],
    ['with a space', 'two words'],
    ['with a non-ASCII character', 'clave-ñ'],
  ])('refuses a key that is %s (400)', async (_name, key) => {
    const res = await post(
      { externalId: `I-bad-${key.length}`, amount: '20.00', currency: 'MXN', occurredAt: recent() },
      key,
    );
    expect(res.statusCode).toBe(400);
    expect(code(res)).toBe('invalid_idempotency_key');
  });
});
