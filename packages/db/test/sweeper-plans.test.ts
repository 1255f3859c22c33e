/**
 * The sweeper asks every organization its questions every minute: each must read what it is
 * about, never the whole invoices table (the organization's policy is a filter, not an index
 * condition, so it narrows nothing). With 1,000 organizations, the replacements' question reading
 * every invoice was 58–64% of Postgres's time (bench:e2e -- --organizations 1000).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Prisma } from '../src/index.ts';
import { invoicesWithOverdueDependents, replacementsAwaitingCancellation } from '../src/invoices/index.ts';
import { organizationSession } from '../src/organizations/session.ts';
import type { RawDb } from '../src/sql.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

let t: Awaited<ReturnType<typeof databaseWithEmisor>>;
const OTHER = '00000000-0000-4000-8000-000000000002';
beforeAll(async () => {
  t = await databaseWithEmisor();
  // History: 3,000 stamped invoices of one organization (written as history is, triggers off: they
  // are consistent by construction), and another organization with none.
  await t.sql.query('SET session_replication_role = replica');
  await t.sql.query(
    `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key,
                           frozen_xml, uuid, tfd_xml, pac, stamped_at)
     SELECT timbra_uuid7(), $1::uuid, 'I', 'H', g, 'MXN', 100, 116, 'stamped', 'H-' || g,
            '<x/>', upper(gen_random_uuid()::text), '<t/>', 'primary', now()
     FROM generate_series(1, 3000) g`,
    [TEST_EMISOR_ID],
  );
  await t.sql.query('RESET session_replication_role');
  await t.sql.query(
    `INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, 'AAA010101AAA', 'O', '601', '42501')`,
    [OTHER],
  );
  await t.sql.query('VACUUM ANALYZE invoices');
});
afterAll(() => t.close());

/** The statement `ask` sends (it is answered with no rows). */
async function statementOf(ask: (db: RawDb) => Promise<unknown>): Promise<Prisma.Sql> {
  let sent: Prisma.Sql | undefined;
  await ask({
    $queryRaw: <T>(query: Prisma.Sql) => {
      sent = query;
      return Promise.resolve([] as T);
    },
    $executeRaw: () => Promise.resolve(0),
  });
  if (!sent) throw new Error('no statement was sent');
  return sent;
}

/** The statement's plan, run as `organization`'s session would run it. */
async function planAs(organization: string, statement: Prisma.Sql): Promise<string> {
  const client = new pg.Client({ connectionString: t.db.url, options: organizationSession(organization) });
  await client.connect();
  try {
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`,
      statement.values,
    );
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.end();
  }
}

describe("the sweeper's questions, asked of every organization", () => {
  it.each([
    ['stamped replacements whose original is still stamped', (db: RawDb) => replacementsAwaitingCancellation(db, 100)],
    ['invoices with overdue dependents', (db: RawDb) => invoicesWithOverdueDependents(db, 100)],
  ])('%s: an index of what it is about, not the invoices table', async (_what, ask) => {
    const statement = await statementOf(ask);
    for (const organization of [OTHER, TEST_EMISOR_ID]) {
      const plan = await planAs(organization, statement);
      expect(plan).not.toMatch(/Seq Scan on invoices/);
      // A few index pages, whatever the history (the table is ~100 pages); planning's reads of the
      // catalogue are not the statement's.
      const executing = plan.split('\nPlanning:')[0]!;
      const read = [...executing.matchAll(/Buffers: shared hit=(\d+)/g)].reduce((n, m) => Math.max(n, Number(m[1])), 0);
      expect(read).toBeLessThan(10);
    }
  });
});

describe("the sweeper's replacements question, answered", () => {
  it('names a stamped replacement whose original is still stamped, until a motivo-01 request names it', async () => {
    const sql = t.sql;
    const [original, replacement] = ['00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-0000000000a2'];
    await sql.query('BEGIN');
    try {
      // Written as a stamped pair is left (triggers off, as the history above).
      await sql.query("SET LOCAL session_replication_role = 'replica'");
      await sql.query(
        `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key,
                               frozen_xml, uuid, tfd_xml, pac, stamped_at, replaces_invoice_id)
         VALUES ($1, $3, 'I', 'R', 1, 'MXN', 100, 116, 'stamped', 'R-1', '<x/>', 'AAAAAAAA-0000-4000-8000-000000000001', '<t/>', 'primary', now(), NULL),
                ($2, $3, 'I', 'R', 2, 'MXN', 100, 116, 'stamped', 'R-2', '<x/>', 'AAAAAAAA-0000-4000-8000-000000000002', '<t/>', 'primary', now(), $1)`,
        [original, replacement, TEST_EMISOR_ID],
      );
      const db: RawDb = {
        $queryRaw: async <T>(q: Prisma.Sql) => (await sql.query(q.text, q.values)).rows as T,
        $executeRaw: async (q: Prisma.Sql) => (await sql.query(q.text, q.values)).rowCount ?? 0,
      };
      expect(await replacementsAwaitingCancellation(db, 100)).toEqual([replacement]);
      await sql.query(
        `INSERT INTO cancel_requests (id, organization_id, invoice_id, motivo, folio_sustitucion)
         VALUES (gen_random_uuid(), $1, $2, '01', 'AAAAAAAA-0000-4000-8000-000000000002')`,
        [TEST_EMISOR_ID, original],
      );
      expect(await replacementsAwaitingCancellation(db, 100)).toEqual([]);
    } finally {
      await sql.query('ROLLBACK');
    }
  });
});
