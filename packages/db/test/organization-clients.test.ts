import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { leanDb, Prisma, type PrismaClient } from '../src/index.ts';
import { createApiKey, keyOrganization, revokeApiKey } from '../src/keys/index.ts';
import { isolationOf, OrganizationClients } from '../src/organizations/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';
import pg from 'pg';

// Platform mode's clients (organizations/clients.ts): every organization's client over one pool. With
// a pool of one connection, every statement of one organization follows one of the other's on the
// same session: what one may see of the other shows at once.

let db: TestDatabase;
let owner: pg.Client;
let clients: OrganizationClients;
const ids = { a: randomUUID(), b: randomUUID() };
let a: PrismaClient;
let b: PrismaClient;

beforeAll(async () => {
  db = await createTestDatabase();
  owner = new pg.Client({ connectionString: db.url });
  await owner.connect();
  for (const [id, rfc] of [
    [ids.a, 'EKU9003173C9'],
    [ids.b, 'CACX7605101P8'],
  ] as const)
    await owner.query(
      `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, 'E', '601', '42501')`,
      [id, rfc],
    );
  clients = new OrganizationClients(db.url, { poolSize: 1 });
  a = clients.for(ids.a);
  b = clients.for(ids.b);
});
afterAll(async () => {
  await clients.close();
  await owner.end();
  await db.drop();
});

const payment = (externalId: string) => ({
  provider: 'api',
  externalId,
  amount: '116.00',
  currency: 'MXN',
  occurredAt: new Date(),
});

const COUNT = Prisma.sql`SELECT count(*)::int AS n FROM payments`;

describe('organizations over one shared pool', () => {
  it('holds each client to its organization on the same connection, statement after statement', async () => {
    for (let i = 0; i < 5; i++) {
      await a.payment.create({ data: payment(`A-${i}`) });
      await b.payment.create({ data: payment(`B-${i}`) });
    }
    const seenByA = (await a.payment.findMany({ select: { externalId: true } })).map((p) => p.externalId);
    const seenByB = (await b.payment.findMany({ select: { externalId: true } })).map((p) => p.externalId);
    expect(seenByA.sort()).toEqual(['A-0', 'A-1', 'A-2', 'A-3', 'A-4']);
    expect(seenByB.sort()).toEqual(['B-0', 'B-1', 'B-2', 'B-3', 'B-4']);
    // What the owner sees: each row written in the name of the client that wrote it.
    const { rows } = await owner.query<{ organization_id: string; n: number }>(
      'SELECT organization_id, count(*)::int AS n FROM payments GROUP BY 1 ORDER BY 1',
    );
    expect(Object.fromEntries(rows.map((r) => [r.organization_id, r.n]))).toEqual({ [ids.a]: 5, [ids.b]: 5 });
  });

  it("keeps to its organization in Prisma's transactions and the lean runner's", async () => {
    const seen = await a.$transaction(async (tx) => {
      await tx.payment.create({ data: payment('A-tx') });
      return tx.payment.count();
    });
    expect(seen).toBe(6);
    const leanSeen = await leanDb(b).transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ n: number }[]>(COUNT);
      return rows[0]!.n;
    });
    expect(leanSeen).toBe(5);
    expect((await leanDb(a).$queryRaw<{ n: number }[]>(COUNT))[0]!.n).toBe(6);
  });

  it('cannot write in the name of the other organization', async () => {
    await expect(a.payment.create({ data: { ...payment('A-as-B'), organizationId: ids.b } })).rejects.toThrow(
      /row-level security/,
    );
    // The refusal left the connection working for the right organization.
    expect(await b.payment.count()).toBe(5);
    expect(await a.payment.count()).toBe(6);
  });

  it("sets a lean transaction's organization in its first message, for that transaction only", async () => {
    const owned = async (id: string) =>
      (await owner.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE organization_id = $1', [id]))
        .rows[0]!.n;
    const [ofA, ofB] = [await owned(ids.a), await owned(ids.b)];
    const count = async (client: PrismaClient) => (await leanDb(client).$queryRaw<{ n: number }[]>(COUNT))[0]!.n;
    // What the one connection is sent (observed on node-postgres's own client, then passed on).
    const sent: string[] = [];
    const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const query = prototype.query;
    prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
      sent.push(typeof config === 'string' ? config : (config as { text: string }).text);
      return query.apply(this, [config, ...rest]);
    };
    const setConfigs = () => sent.filter((text) => text.includes('set_config'));
    try {
      expect(await count(a)).toBe(ofA); // the connection now works for A
      sent.length = 0;
      expect(await leanDb(b).transaction(async (tx) => (await tx.$queryRaw<{ n: number }[]>(COUNT))[0]!.n)).toBe(ofB);
      expect(sent[0]).toMatch(/^BEGIN; .*; SELECT set_config\('app\.org', '[0-9a-f-]{36}', true\)$/);
      expect(setConfigs()).toHaveLength(1);
      // Committed: the session still works for A, whose next statement needs no set_config.
      sent.length = 0;
      expect(await count(a)).toBe(ofA);
      expect(setConfigs()).toEqual([]);
      // Rolled back: the same.
      await expect(
        leanDb(b).transaction(async (tx) => {
          expect((await tx.$queryRaw<{ n: number }[]>(COUNT))[0]!.n).toBe(ofB);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      sent.length = 0;
      expect(await count(a)).toBe(ofA);
      expect(setConfigs()).toEqual([]);
      // A statement of B's outside a transaction moves the session to B: one set_config, then none.
      expect(await count(b)).toBe(ofB);
      expect(await count(b)).toBe(ofB);
      expect(setConfigs()).toHaveLength(1);
      // And a transaction of B's on a connection working for B sets nothing.
      sent.length = 0;
      await leanDb(b).transaction(async (tx) => await tx.$queryRaw(COUNT));
      expect(sent[0]).not.toContain('set_config');
      expect(setConfigs()).toEqual([]);
    } finally {
      prototype.query = query;
    }
  });

  it('runs as the role row-level security binds, naming the organization', async () => {
    expect(await isolationOf(a)).toEqual({ role: 'timbra_app', organization: ids.a, bypassesRls: false, exists: true });
    expect(await isolationOf(clients.unscoped)).toEqual({
      role: 'timbra_app',
      organization: undefined,
      bypassesRls: false,
      exists: false,
    });
  });

  it('the unscoped client sees no row, and learns only the organization of a key', async () => {
    expect(await clients.unscoped.payment.count()).toBe(0);
    expect(await clients.unscoped.apiClient.count()).toBe(0);
    const { key } = await createApiKey(b, 'pos', ['read']);
    const { key: revoked } = await createApiKey(a, 'old', ['read']);
    await revokeApiKey(a, 'old');
    expect(await keyOrganization(clients.unscoped, key)).toBe(ids.b);
    expect(await keyOrganization(clients.unscoped, revoked)).toBeUndefined();
    expect(await keyOrganization(clients.unscoped, 'tk_unknown')).toBeUndefined();
    expect(await clients.unscoped.apiClient.count()).toBe(0);
  });

  it("keeps each statement in its organization when both organizations' calls share a tick", async () => {
    const rowsOf = async (client: PrismaClient) => client.payment.findMany({ select: { id: true } });
    const [ofA, ofB] = [await rowsOf(a), await rowsOf(b)];
    // Both organizations look up every id at once, in the same tick: the runtime would group these
    // findUnique calls into one query sent from the first caller's scope.
    const all = [...ofA, ...ofB].map((p) => p.id);
    const found = await Promise.all(
      [a, b].flatMap((client) => all.map((id) => client.payment.findUnique({ where: { id }, select: { id: true } }))),
    );
    const seenByA = found.slice(0, all.length).filter(Boolean).length;
    const seenByB = found.slice(all.length).filter(Boolean).length;
    expect([seenByA, seenByB]).toEqual([ofA.length, ofB.length]);
    // Interactive transactions of both, interleaved: each counts its own.
    const counts = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? b : a).$transaction(async (tx) => tx.payment.count())),
    );
    expect(counts).toEqual([6, 5, 6, 5, 6, 5]);
  });

  it('refuses batch transactions, which the runtime sends outside their scope', async () => {
    expect(() => a.$transaction([a.payment.count()] as never)).toThrow(/batch transaction/);
    const u = clients.unscoped;
    await expect(u.$transaction([u.payment.count()])).rejects.toThrow(/batch transaction/);
  });

  it('makes one client an organization, and refuses a name that is not an id', () => {
    expect(clients.for(ids.a.toUpperCase())).toBe(a);
    expect(() => clients.for("x' OR true")).toThrow(/UUID/);
  });
});
