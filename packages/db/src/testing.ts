/**
 * Test support: a fresh, migrated database per test file on the local Postgres, dropped afterwards,
 * the pgbench reference of the benchmarks, and probes that look at the database from below. Not part
 * of the runtime API (exported as `@timbra/db/testing`).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { z } from 'zod';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { createPrisma } from './index.ts';
import { TRANSITIONS, type InvoiceStatus } from './invoices/invoice-status.ts';
import { OUTBOX_CHANNEL } from './outbox/outbox.ts';
import { queryRows, type RawDb } from './sql.ts';
import { ensureDatabase, migrate } from './migrate.ts';
import { MIGRATIONS_DIR } from './paths.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const recordRow = z.object({ item: z.string(), txid: z.string() });
const storedRow = z.object({ item: z.string() });
const ingresosWithTransactionsRow = z.object({
  folio: z.number(),
  external_id: z.string(),
  tx: z.string(),
  outbox: z.number(),
});
const outboxListenerPidsRow = z.object({ pid: z.number() });

/** Server the test databases are created on: `$TEST_DATABASE_URL`, default the local trust-auth Postgres. */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  drop: () => Promise<void>;
}

/**
 * Creates `timbra_test_<random>` and (unless `migrated: false`) applies every migration, on
 * `serverUrl` (default {@link TEST_SERVER_URL}); those of `migrationsDir` when given (another
 * checkout's: a benchmark comparing two commits).
 */
export async function createTestDatabase(
  options: { migrated?: boolean; serverUrl?: string; migrationsDir?: string } = {},
): Promise<TestDatabase> {
  const serverUrl = options.serverUrl ?? TEST_SERVER_URL;
  const name = `timbra_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  if (options.migrated !== false) await migrate(url.toString(), options.migrationsDir ?? MIGRATIONS_DIR);
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/**
 * What Postgres alone does with the transaction of recording one payment — serie counter update,
 * payment insert, invoice insert with a ~3 KB XML, outbox insert, NOTIFY — run by `pgbench`
 * (`clients` connections, `seconds` long) on a fresh database of its own, on one serie. The
 * reference the ingest and end-to-end benchmarks compare against. Needs the `pgbench` binary.
 *
 * @returns transactions per second.
 */
export async function pgbenchPaymentShape(options: {
  clients: number;
  seconds: number;
  /** The Postgres to run on (default {@link TEST_SERVER_URL}). */
  serverUrl?: string;
}): Promise<number> {
  const db = await createTestDatabase({ serverUrl: options.serverUrl });
  const dir = mkdtempSync(join(tmpdir(), 'timbra-pgbench-'));
  try {
    const setup = new pg.Client({ connectionString: db.url });
    await setup.connect();
    const emisor = (
      await setup.query<{ id: string }>(
        `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES (gen_random_uuid(), 'EKU9003173C9', 'E', '601', '42501') RETURNING id`,
      )
    ).rows[0]!.id;
    await setup.query(
      `INSERT INTO series (id, organization_id, serie, kind) VALUES (gen_random_uuid(), $1, 'A', 'I')`,
      [emisor],
    );
    await setup.end();
    const xml = 'x'.repeat(3000);
    writeFileSync(
      join(dir, 'payment.sql'),
      [
        'BEGIN;',
        `UPDATE series SET next_folio = next_folio + 1 WHERE organization_id = '${emisor}' AND serie = 'A' RETURNING next_folio - 1 AS folio \\gset`,
        `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at) VALUES (timbra_uuid7(), 'bench', gen_random_uuid()::text, 1160.00, 'MXN', now()) RETURNING id AS payment_id \\gset`,
        `INSERT INTO invoices (id, organization_id, payment_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml, cadena_original) VALUES (timbra_uuid7(), '${emisor}', :payment_id, 'I', 'A', :folio, 'MXN', 1000.00, 1160.00, 'pending', gen_random_uuid()::text, '${xml}', '${'c'.repeat(600)}') RETURNING id AS invoice_id, stamp_key \\gset`,
        `INSERT INTO outbox (id, kind, invoice_id, stamp_key) VALUES (timbra_uuid7(), 'stamp', :invoice_id, :stamp_key);`,
        `SELECT pg_notify('timbra_outbox', :invoice_id);`,
        'COMMIT;',
      ].join('\n'),
    );
    const url = new URL(db.url);
    const out = execFileSync(
      'pgbench',
      [
        ...['-n', '-M', 'extended', '-c', String(options.clients), '-j', '2', '-T', String(options.seconds)],
        ...['-f', join(dir, 'payment.sql'), '-h', url.hostname, '-p', url.port || '5432'],
        ...['-U', decodeURIComponent(url.username) || 'postgres', url.pathname.slice(1)],
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

// --- Probes for tests that look at the database from below ------------------------------------------

/**
 * A scratch table that records items with the id of the transaction that wrote them: for tests of
 * batching (which items shared a transaction). `record` fails, after writing, when an item starts
 * with "bad" (a batch member that fails its transaction).
 */
export async function createTxidProbe(prisma: PrismaClient) {
  await prisma.$executeRawUnsafe('CREATE TABLE IF NOT EXISTS tx_probe (item text PRIMARY KEY, txid bigint NOT NULL)');
  return {
    record: async (tx: RawDb, items: string[]): Promise<{ item: string; txid: string }[]> => {
      const rows = await queryRows(
        tx,
        recordRow,
        Prisma.sql`INSERT INTO tx_probe (item, txid) SELECT item, txid_current() FROM unnest(${items}::text[]) AS item
                   RETURNING item, txid::text`,
      );
      if (items.some((i) => i.startsWith('bad'))) throw new Error(`bad item in ${items.join(',')}`);
      const txidOf = new Map(rows.map((r) => [r.item, r.txid]));
      return items.map((item) => ({ item, txid: txidOf.get(item)! }));
    },
    stored: async (prefix: string): Promise<string[]> =>
      (
        await queryRows(
          prisma,
          storedRow,
          Prisma.sql`SELECT item FROM tx_probe WHERE item LIKE ${`${prefix}%`} ORDER BY item`,
        )
      ).map((r) => r.item),
  };
}

/**
 * The database's now, in milliseconds: for a test that back-dates a row the database compares with
 * its own clock (`created_at`, `enqueued_at`): under a fake application clock (CI's 2027 run) the
 * two differ.
 */
export async function databaseNow(prisma: PrismaClient): Promise<number> {
  const [row] = await prisma.$queryRaw<{ now: Date }[]>`SELECT now() AS now`;
  return row!.now.getTime();
}

/** Runs `text` on a connection of the database's owner: what the apps' own role may not do (DDL, the migrations' record). */
async function asOwner(databaseUrl: string, text: string): Promise<void> {
  const owner = new pg.Client({ connectionString: databaseUrl });
  await owner.connect();
  try {
    await owner.query(text);
  } finally {
    await owner.end();
  }
}

/** Marks every applied migration rolled back, as if the schema were behind the code (readiness tests). */
export async function markMigrationsRolledBack(databaseUrl: string): Promise<void> {
  await asOwner(databaseUrl, `UPDATE "_prisma_migrations" SET rolled_back_at = now()`);
}

/**
 * Makes every INSERT into the outbox fail (a trigger) until the returned function is called: proves
 * a payment's rows commit together or not at all.
 */
export async function failOutboxInserts(databaseUrl: string): Promise<() => Promise<void>> {
  await asOwner(
    databaseUrl,
    `CREATE FUNCTION fail_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END; $$;
     CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION fail_outbox();`,
  );
  return () => asOwner(databaseUrl, 'DROP TRIGGER fail_outbox ON outbox; DROP FUNCTION fail_outbox();');
}

/**
 * The Ingresos of payments whose external id starts with `prefix`, by folio: the transaction that
 * wrote each (xmin) and how many outbox rows it has.
 */
export async function ingresosWithTransactions(prisma: PrismaClient, prefix: string) {
  return queryRows(
    prisma,
    ingresosWithTransactionsRow,
    Prisma.sql`
      SELECT i.folio, p.external_id, i.xmin::text AS tx, (SELECT count(*) FROM outbox o WHERE o.invoice_id = i.id)::int AS outbox
      FROM invoices i JOIN payments p ON p.id = i.payment_id
      WHERE p.external_id LIKE ${`${prefix}%`} ORDER BY i.folio`,
  );
}

/** Backend pids of the connections LISTENing on the outbox channel in this database. */
export async function outboxListenerPids(prisma: PrismaClient): Promise<number[]> {
  const rows = await queryRows(
    prisma,
    outboxListenerPidsRow,
    Prisma.sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = ${`LISTEN ${OUTBOX_CHANNEL}`}`,
  );
  return rows.map((r) => r.pid);
}

/** Terminates a backend (a dropped connection, as a Postgres restart would drop it). */
export async function terminateBackend(prisma: PrismaClient, pid: number): Promise<void> {
  await prisma.$queryRaw`SELECT pg_terminate_backend(${pid}::int)`;
}

/**
 * Moves an invoice to `target` through legal transitions only (the shortest path in TRANSITIONS), as
 * the worker would: for tests that need an invoice in a state without running a PAC.
 */
export async function walkInvoiceTo(prisma: PrismaClient, invoiceId: string, target: InvoiceStatus): Promise<void> {
  const { status } = await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId }, select: { status: true } });
  const previous = new Map<InvoiceStatus, InvoiceStatus>();
  const queue: InvoiceStatus[] = [status];
  while (queue.length > 0 && !previous.has(target) && target !== status) {
    const at = queue.shift()!;
    for (const next of TRANSITIONS[at]) {
      if (next === status || previous.has(next)) continue;
      previous.set(next, at);
      queue.push(next);
    }
  }
  if (target !== status && !previous.has(target)) throw new Error(`no legal path from ${status} to ${target}`);
  const path: InvoiceStatus[] = [];
  for (let at = target; at !== status; at = previous.get(at)!) path.unshift(at);
  for (const next of path) await prisma.invoice.update({ where: { id: invoiceId }, data: { status: next } });
}

/** The test emisor's id in `databaseWithEmisor`. */
export const TEST_EMISOR_ID = '00000000-0000-4000-8000-000000000001';

/**
 * A fresh migrated database holding the test emisor (EKU9003173C9), with a Prisma client that works for
 * its organization alone (as the apps' do) and a plain pg client of the database's owner for set-up
 * SQL (rows back-dated or written as another process would). `close()` drops it.
 */
export async function databaseWithEmisor(options: { poolSize?: number } = {}) {
  const db = await createTestDatabase();
  const sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  await sql.query(
    `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, 'EKU9003173C9', 'E', '601', '42501')`,
    [TEST_EMISOR_ID],
  );
  // As the apps work: row-level security holds the client to the emisor's organization.
  const prisma = createPrisma(db.url, { poolSize: options.poolSize ?? 2, organization: TEST_EMISOR_ID });
  return {
    db,
    prisma,
    sql,
    close: async () => {
      await sql.end();
      await prisma.$disconnect();
      await db.drop();
    },
  };
}
