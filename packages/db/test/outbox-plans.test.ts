/**
 * The sweeper's stale-rows query must read the enqueued index whatever the statistics say
 * (migration 20270111000000). The state that turned the planner to `outbox_open_idx` is built here
 * on purpose: statistics taken when no row was open, an enqueued index bloated by claims that left
 * their entries behind, then open rows the statistics have not seen.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import type { Prisma } from '../src/generated/client.ts';
import { claimOutboxAcross, staleEnqueuedOutboxRows } from '../src/outbox/index.ts';
import type { RawDb } from '../src/sql.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

let t: Awaited<ReturnType<typeof databaseWithEmisor>>;
beforeAll(async () => {
  t = await databaseWithEmisor();
});
afterAll(() => t.close());

/** `n` invoices of serie `serie`, each with a stamp outbox row in `status`. */
async function rowsOf(client: pg.Client, serie: string, n: number, status: 'pending' | 'done') {
  await client.query(
    `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
     SELECT timbra_uuid7(), $1::uuid, 'I', $2, g, 'MXN', 100, 116, 'pending', $2 || '-' || g, '<x/>'
     FROM generate_series(1, $3::int) g`,
    [TEST_EMISOR_ID, serie, n],
  );
  await client.query(
    `INSERT INTO outbox (id, kind, invoice_id, stamp_key, status, available_at, organization_id)
     SELECT timbra_uuid7(), 'stamp', i.id, i.stamp_key, $2, now() - interval '1 second', $3::uuid
     FROM invoices i WHERE i.serie = $1`,
    [serie, status, TEST_EMISOR_ID],
  );
}

/** The plans auto_explain reports (as NOTICEs) for what `work` runs on `client`, nested ones too. */
async function plansOf(client: pg.Client, work: () => Promise<unknown>): Promise<string[]> {
  const plans: string[] = [];
  const onNotice = (notice: { message?: string }) => {
    plans.push(notice.message ?? '');
  };
  await client.query(`LOAD 'auto_explain'`);
  await client.query(`SET auto_explain.log_min_duration = 0`);
  await client.query(`SET auto_explain.log_nested_statements = on`);
  await client.query(`SET auto_explain.log_level = notice`);
  client.on('notice', onNotice);
  try {
    await work();
  } finally {
    client.off('notice', onNotice);
    await client.query(`SET auto_explain.log_min_duration = -1`);
  }
  return plans;
}

describe("the sweeper's stale-rows query", () => {
  it('reads outbox_enqueued_idx, no sort, even when the statistics favour outbox_open_idx', async () => {
    const sql = t.sql;
    await rowsOf(sql, 'H', 3000, 'done');
    // Claims that left their entries in the enqueued index (rolled back here; committed claims
    // leave them too until VACUUM), then statistics that have seen no open row.
    await sql.query('BEGIN');
    await sql.query(`UPDATE outbox SET status = 'enqueued', enqueued_at = now() WHERE status = 'done'`);
    await sql.query('ROLLBACK');
    await sql.query('VACUUM ANALYZE outbox');
    await sql.query('BEGIN');
    try {
      await rowsOf(sql, 'N', 1000, 'pending');
      // The old statement, to show the state is the one that turned the planner: it sorts the open rows.
      const old = (
        await sql.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN SELECT id, stamp_key, version FROM outbox
           WHERE status = 'enqueued' AND enqueued_at < now() - make_interval(secs => 300::float8)
           ORDER BY enqueued_at LIMIT 100`,
        )
      ).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      expect(old).toContain('outbox_open_idx');
      expect(old).toContain('Sort');

      const plans = await plansOf(sql, () => sql.query(`SELECT * FROM timbra_stale_enqueued_outbox(300000, 100)`));
      const inner = plans.find((p) => p.includes('FROM public.outbox o'));
      expect(inner).toBeDefined();
      expect(inner).toContain('Index Scan using outbox_enqueued_idx');
      expect(inner).not.toContain('Sort');
    } finally {
      await sql.query('ROLLBACK');
    }
  });

  it("returns the rows enqueued longer than the given time, oldest first, up to the limit, through the organization's client", async () => {
    const sql = t.sql;
    await rowsOf(sql, 'S', 5, 'pending');
    await sql.query(
      `UPDATE outbox o SET status = 'enqueued', enqueued_at = now() - make_interval(mins => 10 - i.folio)
       FROM invoices i WHERE i.id = o.invoice_id AND i.serie = 'S'`,
    );
    // Folio 5 was enqueued 5 minutes ago, folio 1 nine: older than 6.5 minutes are folios 1–3.
    const stale = await staleEnqueuedOutboxRows(t.prisma, 6.5 * 60_000, 2);
    expect(stale.map((r) => r.stampKey)).toEqual(['S-1', 'S-2']);
    expect((await staleEnqueuedOutboxRows(t.prisma, 6.5 * 60_000, 10)).map((r) => r.stampKey)).toEqual([
      'S-1',
      'S-2',
      'S-3',
    ]);
    expect(stale[0]).toMatchObject({ version: 1 });
    expect(stale[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('the relay’s claim across organizations, planned once', () => {
  it('updates the claimed rows by their key, never reading the whole outbox', async () => {
    const sql = t.sql;
    await rowsOf(sql, 'R', 3000, 'done');
    await rowsOf(sql, 'Q', 40, 'pending');
    await sql.query('VACUUM ANALYZE outbox');
    // The statement on the owner's session, as the relay's rounds run it: a generic plan.
    const raw: RawDb = {
      $queryRaw: async <T = unknown>(q: Prisma.Sql) => (await sql.query(q.text, q.values)).rows as T,
      $executeRaw: async (q: Prisma.Sql) => (await sql.query(q.text, q.values)).rowCount ?? 0,
    };
    await sql.query('BEGIN');
    try {
      await sql.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const plans = await plansOf(sql, () => claimOutboxAcross(raw, [TEST_EMISOR_ID], 8));
      const claim = plans.find((p) => p.includes('Update on outbox'));
      expect(claim).toBeDefined();
      expect(claim).toContain('Index Scan using outbox_pkey on outbox o');
      expect(claim).not.toMatch(/Seq Scan on outbox/);
    } finally {
      await sql.query('ROLLBACK');
    }
  });
});
