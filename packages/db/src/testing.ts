/**
 * Test support: a fresh, migrated database per test file on the local Postgres, dropped afterwards.
 * Not part of the runtime API (exported as `@timbra/db/testing`).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureDatabase, migrate } from './migrate.ts';
import { MIGRATIONS_DIR } from './paths.ts';

/** Server the test databases are created on: `$TEST_DATABASE_URL`, default the local trust-auth Postgres. */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  drop: () => Promise<void>;
}

/**
 * Creates `timbra_test_<random>` and (unless `migrated: false`) applies every migration, on
 * `serverUrl` (default {@link TEST_SERVER_URL}).
 */
export async function createTestDatabase(
  options: { migrated?: boolean; serverUrl?: string } = {},
): Promise<TestDatabase> {
  const serverUrl = options.serverUrl ?? TEST_SERVER_URL;
  const name = `timbra_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  if (options.migrated !== false) await migrate(url.toString(), MIGRATIONS_DIR);
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
export async function pgbenchPaymentShape(options: { clients: number; seconds: number }): Promise<number> {
  const db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'timbra-pgbench-'));
  try {
    const setup = new pg.Client({ connectionString: db.url });
    await setup.connect();
    const emisor = (
      await setup.query<{ id: string }>(
        `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES (gen_random_uuid(), 'EKU9003173C9', 'E', '601', '42501') RETURNING id`,
      )
    ).rows[0]!.id;
    await setup.query(`INSERT INTO series (id, emisor_id, serie, kind) VALUES (gen_random_uuid(), $1, 'A', 'I')`, [
      emisor,
    ]);
    await setup.end();
    const xml = 'x'.repeat(3000);
    writeFileSync(
      join(dir, 'payment.sql'),
      [
        'BEGIN;',
        `UPDATE series SET next_folio = next_folio + 1 WHERE emisor_id = '${emisor}' AND serie = 'A' RETURNING next_folio - 1 AS folio \\gset`,
        `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at) VALUES (gen_random_uuid(), 'bench', gen_random_uuid()::text, 1160.00, 'MXN', now()) RETURNING id AS payment_id \\gset`,
        `INSERT INTO invoices (id, emisor_id, payment_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml, cadena_original) VALUES (gen_random_uuid(), '${emisor}', :payment_id, 'I', 'A', :folio, 'MXN', 1000.00, 1160.00, 'pending', gen_random_uuid()::text, '${xml}', '${'c'.repeat(600)}') RETURNING id AS invoice_id, stamp_key \\gset`,
        `INSERT INTO outbox (id, kind, invoice_id, stamp_key) VALUES (gen_random_uuid(), 'stamp', :invoice_id, :stamp_key);`,
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
