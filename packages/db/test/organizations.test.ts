import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createPrisma, migrate, MIGRATIONS_DIR, type PrismaClient } from '../src/index.ts';
import {
  APP_ROLE,
  assertIsolated,
  isolationOf,
  NotIsolatedError,
  openOrganization,
} from '../src/organizations/index.ts';
import { organizationSession } from '../src/organizations/session.ts';
import { createTestDatabase, databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

// Platform mode's isolation, as Postgres enforces it (migration 20261219000000): every tenant table
// names its organization, and row-level security holds the apps' role to the one its session names.

const SHARED = ['_prisma_migrations', 'invoice_status_transitions'];
const OTHER = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };

let db: Awaited<ReturnType<typeof databaseWithEmisor>>;
let a: PrismaClient;
let b: PrismaClient;
let bId: string;
/** A session of the apps' role that names no organization. */
let nobody: pg.Client;

beforeAll(async () => {
  db = await databaseWithEmisor();
  a = db.prisma;
  ({ prisma: b, organizationId: bId } = await openOrganization(db.db.url, OTHER, { poolSize: 2 }));
  nobody = new pg.Client({ connectionString: db.db.url, options: `-c role=${APP_ROLE}` });
  await nobody.connect();
  // Organization A's rows, written through its own client.
  const client = await a.apiClient.create({ data: { name: 'pos', keyHash: 'a'.repeat(64) } });
  await a.idempotencyKey.create({
    data: {
      clientId: client.id,
      key: 'k-1',
      fingerprint: 'f',
      responseStatus: 201,
      responseBody: {},
      expiresAt: new Date(Date.now() + 3_600_000),
    },
  });
  await a.webhookEndpoint.create({
    data: { url: 'https://example.com/hook', events: ['*'], secret: 'whsec_a' },
  });
  await a.payment.create({
    data: { provider: 'api', externalId: 'A-1', amount: '116.00', currency: 'MXN', occurredAt: new Date() },
  });
});
afterAll(async () => {
  await nobody.end();
  await b.$disconnect();
  await db.close();
});

/** Every table of the schema and the column naming its organization, read from the catalogue. */
async function tenantTables(): Promise<{ table: string; column: string }[]> {
  const { rows } = await db.sql.query<{ table: string; column: string | null }>(
    `SELECT c.relname AS table,
            (SELECT a.attname FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attname IN ('organization_id', 'organization_id') AND NOT a.attisdropped
             ORDER BY a.attname DESC LIMIT 1) AS column
     FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' ORDER BY 1`,
  );
  return rows
    .filter((r) => !SHARED.includes(r.table))
    .map((r) => ({ table: r.table, column: r.table === 'emisores' ? 'id' : (r.column ?? '(none)') }));
}

async function count(client: PrismaClient | pg.Client, table: string): Promise<number> {
  const text = `SELECT count(*)::int AS n FROM "${table}"`;
  if (client instanceof pg.Client) return (await client.query<{ n: number }>(text)).rows[0]!.n;
  return (await client.$queryRawUnsafe<{ n: number }[]>(text))[0]!.n;
}

describe('the schema', () => {
  it('gives every table but the shared ones an organization column, NOT NULL, and a policy on it', async () => {
    const tables = await tenantTables();
    expect(tables.length).toBeGreaterThanOrEqual(24);
    const { rows: policies } = await db.sql.query<{ table: string; roles: string[]; using: string; check: string }>(
      `SELECT tablename AS table, roles::text[] AS roles, qual AS using, with_check AS check
       FROM pg_policies WHERE schemaname = 'public' AND policyname = 'organization'`,
    );
    const { rows: secured } = await db.sql.query<{ table: string }>(
      `SELECT relname AS table FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relrowsecurity`,
    );
    const { rows: columns } = await db.sql.query<{ table: string; column: string; nullable: string }>(
      `SELECT table_name AS table, column_name AS column, is_nullable AS nullable
       FROM information_schema.columns WHERE table_schema = 'public'`,
    );
    for (const { table, column } of tables) {
      expect({ table, secured: secured.some((s) => s.table === table) }).toEqual({ table, secured: true });
      const policy = policies.find((p) => p.table === table);
      expect({ table, roles: policy?.roles }).toEqual({ table, roles: [APP_ROLE] });
      // The organizations the session names, evaluated once a statement (a subquery), not once a
      // row; read on text, a filter the planner never turns into an index condition.
      const named = `((${column})::text = ANY (( SELECT timbra_named_organizations() AS timbra_named_organizations)::text[]))`;
      expect({ table, using: policy!.using, check: policy!.check }).toEqual({ table, using: named, check: named });
      if (table === 'emisores') continue;
      const info = columns.find((c) => c.table === table && c.column === column);
      expect({ table, column, nullable: info?.nullable }).toEqual({ table, column, nullable: 'NO' });
    }
  });

  it('makes the apps’ role one that cannot log in, is no superuser and cannot bypass row-level security', async () => {
    const { rows } = await db.sql.query(`SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = $1`, [
      APP_ROLE,
    ]);
    expect(rows).toEqual([{ rolsuper: false, rolbypassrls: false, rolcanlogin: false }]);
  });
});

describe('a session that names no organization', () => {
  it('sees no row of any tenant table, though the owner sees them', async () => {
    let populated = 0;
    for (const { table } of await tenantTables()) {
      const owned = (await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}"`)).rows[0]!.n;
      if (owned > 0) populated++;
      expect({ table, seen: await count(nobody, table) }).toEqual({ table, seen: 0 });
    }
    expect(populated).toBeGreaterThanOrEqual(6);
  });

  it('writes nothing: an insert is refused by the policy', async () => {
    await expect(
      nobody.query(
        `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
         VALUES (timbra_uuid7(), 'api', 'X-1', 1, 'MXN', now())`,
      ),
    ).rejects.toThrow(/row-level security/);
  });
});

describe('two organizations', () => {
  it('each sees its own rows and none of the other’s, in every tenant table', async () => {
    await b.payment.create({
      data: { provider: 'api', externalId: 'B-1', amount: '50.00', currency: 'MXN', occurredAt: new Date() },
    });
    for (const { table, column } of await tenantTables()) {
      const byOrg = async (org: string) =>
        (await db.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE ${column} = $1`, [org]))
          .rows[0]!.n;
      expect({ table, a: await count(a, table), b: await count(b, table) }).toEqual({
        table,
        a: await byOrg(TEST_EMISOR_ID),
        b: await byOrg(bId),
      });
    }
    expect((await a.payment.findMany()).map((p) => p.externalId)).toEqual(['A-1']);
    expect((await b.payment.findMany()).map((p) => p.externalId)).toEqual(['B-1']);
    expect((await b.emisor.findMany()).map((e) => e.rfc)).toEqual([OTHER.rfc]);
  });

  it('cannot change or delete the other’s rows, nor write a row in its name', async () => {
    expect(await b.$executeRawUnsafe(`UPDATE payments SET email = 'x@example.com'`)).toBe(1);
    expect(await b.$executeRawUnsafe(`DELETE FROM webhook_endpoints`)).toBe(0);
    expect(await a.payment.count({ where: { email: 'x@example.com' } })).toBe(0);
    expect(await a.webhookEndpoint.count()).toBe(1);
    await expect(
      b.$executeRawUnsafe(
        `INSERT INTO payments (id, organization_id, provider, external_id, amount, currency, occurred_at)
         VALUES (timbra_uuid7(), '${TEST_EMISOR_ID}', 'api', 'B-2', 1, 'MXN', now())`,
      ),
    ).rejects.toThrow(/row-level security/);
    await expect(b.$executeRawUnsafe(`UPDATE payments SET organization_id = '${TEST_EMISOR_ID}'`)).rejects.toThrow(
      /row-level security/,
    );
  });

  it('the owner’s writes need the organization named once there are two', async () => {
    await expect(
      db.sql.query(
        `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at)
         VALUES (timbra_uuid7(), 'api', 'O-1', 1, 'MXN', now())`,
      ),
    ).rejects.toThrow(/organization_id/);
  });
});

describe('keys chosen by a merchant or a provider', () => {
  it('are unique within an organization: the other may use the same ones', async () => {
    await b.apiClient.create({ data: { name: 'pos', keyHash: 'b'.repeat(64) } });
    await b.payment.create({
      data: { provider: 'api', externalId: 'A-1', amount: '1.00', currency: 'MXN', occurredAt: new Date() },
    });
    const product = {
      reference: 'SKU-1',
      descripcion: 'Audífonos',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
      taxes: { iva: 'default' },
    };
    await a.product.create({ data: { ...product, unitPrice: '580' } });
    await b.product.create({ data: { ...product, unitPrice: '600' } });
    const customer = {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      codigoPostal: '36257',
      regimenFiscal: '612',
      usoCfdi: 'G03',
      stripeCustomerId: 'cus_1',
    };
    await a.customer.create({ data: customer });
    await b.customer.create({ data: customer });
    const event = {
      provider: 'stripe',
      eventId: 'evt_1',
      type: 'payment_intent.succeeded',
      result: 'accepted',
      payload: {},
    };
    await a.webhookEvent.create({ data: event });
    await b.webhookEvent.create({ data: event });
    // Within one organization they stay unique.
    await expect(a.product.create({ data: { ...product, unitPrice: '1' } })).rejects.toThrow(/Unique constraint/);
    await expect(a.apiClient.create({ data: { name: 'pos', keyHash: 'c'.repeat(64) } })).rejects.toThrow(
      /Unique constraint/,
    );
  });
});

describe('what a client is held to', () => {
  it('reads the role and organization from Postgres, and refuses a client that is not held', async () => {
    expect(await isolationOf(a)).toEqual({
      role: APP_ROLE,
      organization: TEST_EMISOR_ID,
      bypassesRls: false,
      exists: true,
    });
    await expect(assertIsolated(a, TEST_EMISOR_ID)).resolves.toBeUndefined();
    await expect(assertIsolated(a, bId)).rejects.toThrow(NotIsolatedError);
    const owner = createPrisma(db.db.url, { poolSize: 1 });
    try {
      expect((await isolationOf(owner)).bypassesRls).toBe(true);
      await expect(assertIsolated(owner, TEST_EMISOR_ID)).rejects.toThrow(/bypasses row-level security/);
    } finally {
      await owner.$disconnect();
    }
  });

  it('refuses a session for an organization that does not exist (tenant rows have no foreign key to it)', async () => {
    const ghost = '00000000-0000-4000-8000-0000000000ff';
    const prisma = createPrisma(db.db.url, { poolSize: 1, organization: ghost });
    try {
      expect((await isolationOf(prisma)).exists).toBe(false);
      await expect(assertIsolated(prisma, ghost)).rejects.toThrow(/does not exist/);
    } finally {
      await prisma.$disconnect();
    }
  });

  it('names an organization only by its id: nothing else reaches the session’s settings', () => {
    expect(organizationSession(undefined)).toBe('');
    expect(organizationSession(TEST_EMISOR_ID)).toBe(`-c role=${APP_ROLE} -c app.org=${TEST_EMISOR_ID}`);
    expect(() => organizationSession(`${TEST_EMISOR_ID} -c role=postgres`)).toThrow(/UUID/);
  });
});

describe('the migration, on a database with history', () => {
  /** A database migrated up to the one before organizations, `rows` written, then migrated to the end. */
  async function migratedWith(
    rows: string,
  ): Promise<{ url: string; drop: () => Promise<void>; outcome: Promise<unknown> }> {
    const db = await createTestDatabase({ migrated: false });
    const before = mkdtempSync(join(tmpdir(), 'timbra-migrations-'));
    cpSync(MIGRATIONS_DIR, before, { recursive: true });
    for (const name of readdirSync(before))
      if (name >= '20261219000000') rmSync(join(before, name), { recursive: true });
    await migrate(db.url, before);
    rmSync(before, { recursive: true });
    const owner = new pg.Client({ connectionString: db.url });
    await owner.connect();
    await owner.query(rows);
    await owner.end();
    return { url: db.url, drop: db.drop, outcome: migrate(db.url, MIGRATIONS_DIR) };
  }
  const emisor = (id: string, rfc: string) =>
    `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ('${id}', '${rfc}', 'E', '601', '42501');`;
  const payment = (externalId: string) =>
    `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at) VALUES (timbra_uuid7(), 'api', '${externalId}', 1, 'MXN', now());`;

  it('gives the rows of a one-emisor deployment to its organization', async () => {
    const db = await migratedWith(emisor(TEST_EMISOR_ID, 'EKU9003173C9') + payment('H-1') + payment('H-2'));
    try {
      await db.outcome;
      const prisma = createPrisma(db.url, { poolSize: 1, organization: TEST_EMISOR_ID });
      try {
        expect((await prisma.payment.findMany({ orderBy: { externalId: 'asc' } })).map((p) => p.externalId)).toEqual([
          'H-1',
          'H-2',
        ]);
      } finally {
        await prisma.$disconnect();
      }
    } finally {
      await db.drop();
    }
  });

  it('stops, saying why, when rows exist and there is not exactly one emisor to own them', async () => {
    const db = await migratedWith(
      emisor(TEST_EMISOR_ID, 'EKU9003173C9') +
        emisor('00000000-0000-4000-8000-000000000002', 'CACX7605101P8') +
        payment('H-1'),
    );
    try {
      await expect(db.outcome).rejects.toThrow(/table payments has rows and the database has 2 emisores/);
    } finally {
      await db.drop();
    }
  });
});
