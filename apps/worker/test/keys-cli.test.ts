/**
 * `npm run ops -- keys:create | keys:list | keys:revoke` against the API as its real process: a key
 * made on the command line works at once with the scopes it was given, and a revoked one is refused
 * at once; bad usage exits 2.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { opsHere, startApiProcess } from './helpers.ts';

let db: TestDatabase;
let api: { url: string; stop: () => Promise<void> };
beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApiProcess(db.url, 'keys-cli-admin-0123456789');
});
afterAll(async () => {
  await api.stop();
  await db.drop();
});

const get = (key: string) =>
  got.get(`${api.url}/v1/payments`, { headers: { authorization: `Bearer ${key}` }, throwHttpErrors: false });
const post = (key: string) =>
  got.post(`${api.url}/v1/payments`, {
    json: { externalId: 'cli-1', amount: '116.00', currency: 'MXN', occurredAt: new Date().toISOString() },
    headers: { authorization: `Bearer ${key}` },
    throwHttpErrors: false,
  });

describe('ops keys:*', () => {
  it('creates a read-only key (printed once), lists it without its secret, revokes it at once', async () => {
    const created = await opsHere(db.url, ['keys:create', 'dashboard-reader', '--scopes', 'read', '--json']);
    expect(created.status).toBe(0);
    const { key, prefix } = JSON.parse(created.stdout) as { key: string; prefix: string };
    expect((await get(key)).statusCode).toBe(200);
    expect((await post(key)).statusCode).toBe(403);

    const listed = await opsHere(db.url, ['keys:list']);
    expect(listed.stdout).toMatch(new RegExp(`dashboard-reader +${prefix} +read +ops`));
    expect(listed.stdout).not.toContain(key);

    const revoked = await opsHere(db.url, ['keys:revoke', prefix]);
    expect(revoked.status).toBe(0);
    expect(revoked.stdout).toMatch(/API key dashboard-reader revoked at/);
    expect((await get(key)).statusCode).toBe(401);
    expect((await opsHere(db.url, ['keys:list'])).stdout).toMatch(/dashboard-reader .* REVOKED/);
  });

  it('bad usage exits 2; an unknown key or a taken name exits 1', async () => {
    expect((await opsHere(db.url, ['keys:create'])).status).toBe(2);
    expect((await opsHere(db.url, ['keys:create', 'x', '--scopes', 'read,root'])).status).toBe(2);
    expect((await opsHere(db.url, ['keys:revoke', 'nobody'])).status).toBe(1);
    expect((await opsHere(db.url, ['keys:create', 'twice'])).status).toBe(0);
    expect((await opsHere(db.url, ['keys:create', 'twice'])).status).toBe(1);
  });
});
