/**
 * API keys as data: scopes (read, write, cancel, admin), revocation at once on every API instance,
 * API_KEYS as the source of truth of the keys it made, keys made through the admin API, and any key
 * asking about itself (GET /v1/keys/me).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { bootstrap } from '../src/bootstrap.ts';
import { EMISOR, KEYS, startApi, type TestApi } from './helpers.ts';

let a: TestApi;
let b: TestApi;
beforeAll(async () => {
  a = await startApi();
  // A second API instance over the same database, as two replicas behind a load balancer.
  b = await startApi({ database: a.db });
});
afterAll(async () => {
  await b.close();
  await a.close();
});

const call = (api: TestApi, method: 'get' | 'post', path: string, key: string, json?: object) =>
  got(`${api.url}${path}`, {
    method,
    ...(json ? { json } : {}),
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': `${Math.random()}` },
    throwHttpErrors: false,
    responseType: 'json',
  });
type Made = { key: string; id: string; name: string; prefix: string; scopes: string[] };
type ErrorBody = { error: { code: string; details?: { path: string; message: string }[] } };

const payment = (externalId: string) => ({
  externalId,
  amount: '116.00',
  currency: 'MXN',
  occurredAt: new Date(Date.now() - 60_000).toISOString(),
});

describe('API keys', () => {
  it('an admin makes a read-only key: it reads, and gets 403 forbidden (the scope named) on a write or an admin call', async () => {
    const made = await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'reporting', scopes: ['read'] });
    expect(made.statusCode).toBe(201);
    const key = made.body as Made;
    expect(key).toMatchObject({ name: 'reporting', scopes: ['read'], prefix: key.key.slice(0, 12) });
    expect(key.key).toMatch(/^tk_live_/);
    expect((await call(b, 'get', '/v1/payments', key.key)).statusCode).toBe(200);
    const write = await call(b, 'post', '/v1/payments', key.key, payment('ro-1'));
    expect(write.statusCode).toBe(403);
    expect((write.body as ErrorBody).error).toMatchObject({
      code: 'forbidden',
      details: [{ path: 'scope', message: 'needs write; the key has read' }],
    });
    expect((await call(a, 'get', '/v1/keys', key.key)).statusCode).toBe(403);
    expect(await a.prisma.payment.count({ where: { externalId: 'ro-1' } })).toBe(0);

    // The list never holds a secret; the same name again is refused.
    const listed = await call(a, 'get', '/v1/keys', KEYS.admin);
    expect(JSON.stringify(listed.body)).not.toContain(key.key);
    expect((await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'reporting' })).body).toMatchObject({
      error: { code: 'key_name_taken' },
    });
    // A key that writes but may not cancel.
    const clerk = (await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'clerk', scopes: ['read', 'write'] }))
      .body as Made;
    const sale = await call(a, 'post', '/v1/payments', clerk.key, payment('clerk-1'));
    expect(sale.statusCode).toBe(201);
    const invoiceId = (sale.body as { invoices: { id: string }[] }).invoices[0]!.id;
    const cancel = await call(a, 'post', `/v1/invoices/${invoiceId}/cancel`, clerk.key, { motivo: '02' });
    expect((cancel.body as ErrorBody).error.details![0]!.message).toMatch(/^needs cancel/);
    // Non-admin keys may not make keys.
    expect((await call(a, 'post', '/v1/keys', KEYS.pos, { name: 'sneaky', scopes: ['admin'] })).statusCode).toBe(403);
  });

  it('a key revoked on one instance is refused at once by the other', async () => {
    const key = (await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'till-7' })).body as Made;
    expect((await call(b, 'get', '/v1/payments', key.key)).statusCode).toBe(200);
    const revoked = await call(a, 'post', `/v1/keys/${key.id}/revoke`, KEYS.admin);
    expect(revoked.statusCode).toBe(200);
    expect((revoked.body as { revokedAt: string | null }).revokedAt).not.toBeNull();
    expect((await call(b, 'get', '/v1/payments', key.key)).statusCode).toBe(401);
    expect((await call(a, 'get', '/v1/payments', key.key)).statusCode).toBe(401);
  });

  it('any key asks about itself, whatever its scopes: which key, what it may do, whose documents it makes', async () => {
    const organization = { id: a.payments.organizationId, rfc: EMISOR.rfc, nombre: EMISOR.nombre, mode: 'live' };
    for (const scopes of [['write'], ['read'], ['cancel'], ['admin']]) {
      const made = (await call(a, 'post', '/v1/keys', KEYS.admin, { name: `me-${scopes[0]}`, scopes })).body as Made;
      const me = await call(b, 'get', '/v1/keys/me', made.key);
      expect(me.statusCode).toBe(200);
      const { lastUsedAt, ...rest } = me.body as { lastUsedAt: string | null };
      // Recorded after authentication, without waiting (auth.ts): this request's use may not show yet.
      if (lastUsedAt !== null) expect(Date.parse(lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(rest).toEqual({
        id: made.id,
        name: `me-${scopes[0]}`,
        prefix: made.prefix,
        scopes,
        source: 'ops',
        apiVersion: expect.any(String) as unknown,
        createdAt: expect.any(String) as unknown,
        revokedAt: null,
        organization,
      });
      expect(JSON.stringify(me.body)).not.toContain(made.key);
      // The scope rule itself is untouched: a write-only key still may not read.
      if (scopes[0] === 'write') expect((await call(b, 'get', '/v1/payments', made.key)).statusCode).toBe(403);
    }
    // A key from API_KEYS says so.
    expect((await call(a, 'get', '/v1/keys/me', KEYS.pos)).body).toMatchObject({ name: 'pos', source: 'config' });

    // Without a key, with a wrong one or a revoked one: 401; a query it does not take: 400.
    const gone = (await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'me-gone' })).body as Made;
    await call(a, 'post', `/v1/keys/${gone.id}/revoke`, KEYS.admin);
    for (const key of [gone.key, 'tk_live_nobody0123456789abcdef']) {
      const refused = await call(b, 'get', '/v1/keys/me', key);
      expect(refused.statusCode).toBe(401);
      expect((refused.body as ErrorBody).error.code).toBe('unauthorized');
    }
    expect((await got(`${a.url}/v1/keys/me`, { throwHttpErrors: false })).statusCode).toBe(401);
    const asked = await call(a, 'get', '/v1/keys/me?all=1', KEYS.pos);
    expect(asked.statusCode).toBe(400);
  });

  it('API_KEYS is the source of truth of the keys it made: one it no longer lists is revoked; keys made by an admin stay', async () => {
    const config = (keys: { name: string; key: string; scopes: ('read' | 'write' | 'cancel' | 'admin')[] }[]) =>
      bootstrap(a.prisma, { organizationId: a.payments.organizationId, series: [], apiKeys: keys });
    const alpha = { name: 'alpha', key: 'alpha-key-0123456789abcdef', scopes: ['read' as const] };
    const beta = { name: 'beta', key: 'beta-key-0123456789abcdef', scopes: ['read' as const] };
    const kept = (await call(a, 'post', '/v1/keys', KEYS.admin, { name: 'kept' })).body as Made;
    await config([alpha, beta]);
    expect((await call(b, 'get', '/v1/payments', beta.key)).statusCode).toBe(200);
    // A restart with only alpha (and the test's own keys, which this process still uses).
    const { revokedKeys } = await config([
      alpha,
      { name: 'pos', key: KEYS.pos, scopes: ['read', 'write', 'cancel'] },
      { name: 'other', key: KEYS.other, scopes: ['read', 'write', 'cancel'] },
      { name: 'ops', key: KEYS.admin, scopes: ['read', 'write', 'cancel', 'admin'] },
    ]);
    expect(revokedKeys).toEqual(['beta']);
    expect((await call(b, 'get', '/v1/payments', beta.key)).statusCode).toBe(401);
    expect((await call(b, 'get', '/v1/payments', alpha.key)).statusCode).toBe(200);
    expect((await call(b, 'get', '/v1/payments', kept.key)).statusCode).toBe(200);
    // Listed again: back, with the scopes it now says.
    await config([
      { ...beta, scopes: ['read', 'write'] },
      alpha,
      { name: 'ops', key: KEYS.admin, scopes: ['read', 'write', 'cancel', 'admin'] },
      { name: 'pos', key: KEYS.pos, scopes: ['read', 'write', 'cancel'] },
      { name: 'other', key: KEYS.other, scopes: ['read', 'write', 'cancel'] },
    ]);
    expect((await call(b, 'get', '/v1/payments', beta.key)).statusCode).toBe(200);
  });
});
