/** @clock retention ages are measured in SQL, on the database's clock */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import type { PrismaClient } from '../src/index.ts';
import { pruneHistory } from '../src/retention.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

// The retention rules on a real database: what each one takes, and everything it must leave.

let prisma: PrismaClient;
let sql: pg.Client;
let close: () => Promise<void>;
const EMISOR = TEST_EMISOR_ID;

beforeAll(async () => {
  ({ prisma, sql, close } = await databaseWithEmisor());
});
afterAll(() => close());
beforeEach(async () => {
  await sql.query('TRUNCATE outbox_redrives, outbox, pac_attempts, webhook_events, invoices CASCADE');
});

let folio = 0;
/** An invoice with one stamp outbox row in `status`, both `daysAgo` old (by the database's clock). */
async function invoiceWithRow(label: string, rowStatus: string, daysAgo: number) {
  folio++;
  const invoiceStatus = rowStatus === 'done' ? 'stamped' : 'pending';
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, created_at)
     VALUES (gen_random_uuid(), $1, 'I', 'A', $2, 'MXN', 1, 1, 'pending', $3, now() - make_interval(days => $4)) RETURNING id`,
    [EMISOR, folio, label, daysAgo],
  );
  const invoiceId = rows[0]!.id;
  if (invoiceStatus === 'stamped') await sql.query(`UPDATE invoices SET status = 'stamped' WHERE id = $1`, [invoiceId]);
  const outbox = await sql.query<{ id: string }>(
    `INSERT INTO outbox (id, kind, invoice_id, stamp_key, status, created_at, updated_at)
     VALUES (gen_random_uuid(), 'stamp', $1, $2, $3, now() - make_interval(days => $4), now() - make_interval(days => $4))
     RETURNING id`,
    [invoiceId, label, rowStatus, daysAgo],
  );
  return { invoiceId, outboxId: outbox.rows[0]!.id };
}

async function attempt(invoiceId: string, outcome: string, daysAgo: number) {
  await sql.query(
    `INSERT INTO pac_attempts (id, invoice_id, pac, outcome, duration_ms, created_at)
     VALUES (gen_random_uuid(), $1, 'primary', $2, 10, now() - make_interval(days => $3))`,
    [invoiceId, outcome, daysAgo],
  );
}

async function event(id: string, result: string, daysAgo: number) {
  await sql.query(
    `INSERT INTO webhook_events (id, provider, event_id, type, result, payload, reason, received_at)
     VALUES (gen_random_uuid(), 'stripe', $1, 'payment_intent.succeeded', $2, '{}', $3, now() - make_interval(days => $4))`,
    [id, result, result === 'failed' ? 'AMOUNT_INVALID: the amount is not a number' : null, daysAgo],
  );
}

const keys = async (query: string) => (await sql.query<{ k: string }>(query)).rows.map((r) => r.k).sort();
const policy = { outboxDoneDays: 30, pacAttemptsDays: 180, webhookEventsDays: 30 };

describe('pruneHistory', () => {
  it('deletes done outbox rows past their days, and keeps newer, open and re-driven ones', async () => {
    await invoiceWithRow('old-done', 'done', 40);
    await invoiceWithRow('new-done', 'done', 10);
    await invoiceWithRow('old-failed', 'failed', 40);
    await invoiceWithRow('old-pending', 'pending', 40);
    const redriven = await invoiceWithRow('old-done-redriven', 'done', 40);
    await sql.query(
      `INSERT INTO outbox_redrives (id, outbox_id, invoice_id, by) VALUES (gen_random_uuid(), $1, $2, 'ops:ana')`,
      [redriven.outboxId, redriven.invoiceId],
    );

    expect(await pruneHistory(prisma, policy)).toEqual({ outbox: 1, pac_attempts: 0, webhook_events: 0 });
    expect(await keys('SELECT stamp_key AS k FROM outbox')).toEqual([
      'new-done',
      'old-done-redriven',
      'old-failed',
      'old-pending',
    ]);
    // The invoice itself is the fiscal record: never deleted.
    expect(await keys('SELECT stamp_key AS k FROM invoices')).toHaveLength(5);
  });

  it('keeps the PAC calls of an invoice whose outbox row is still open, and calls in flight', async () => {
    const closed = await invoiceWithRow('closed', 'done', 1);
    const open = await invoiceWithRow('open', 'failed', 1);
    await attempt(closed.invoiceId, 'stamped', 200);
    await attempt(closed.invoiceId, 'ambiguous', 200);
    await attempt(closed.invoiceId, 'stamped', 100);
    await attempt(closed.invoiceId, 'in_flight', 200);
    await attempt(open.invoiceId, 'ambiguous', 200);

    expect(await pruneHistory(prisma, policy)).toEqual({ outbox: 0, pac_attempts: 2, webhook_events: 0 });
    expect(
      await keys(
        `SELECT i.stamp_key || ':' || a.outcome || ':' || round(extract(epoch FROM now() - a.created_at) / 86400) AS k
         FROM pac_attempts a JOIN invoices i ON i.id = a.invoice_id`,
      ),
    ).toEqual(['closed:in_flight:200', 'closed:stamped:100', 'open:ambiguous:200']);
  });

  it('deletes provider events past their days except failed ones', async () => {
    await event('evt_old', 'accepted', 31);
    await event('evt_old_ignored', 'ignored', 45);
    await event('evt_old_failed', 'failed', 90);
    await event('evt_new', 'accepted', 2);

    expect(await pruneHistory(prisma, policy)).toEqual({ outbox: 0, pac_attempts: 0, webhook_events: 2 });
    expect(await keys('SELECT event_id AS k FROM webhook_events')).toEqual(['evt_new', 'evt_old_failed']);
  });

  it('works in batches, counts without deleting on a dry run, and keeps a table for ever at 0 days', async () => {
    for (let i = 0; i < 7; i++) await event(`evt_${i}`, 'accepted', 40);
    for (let i = 0; i < 3; i++) await invoiceWithRow(`done-${i}`, 'done', 40);

    expect(await pruneHistory(prisma, policy, { dryRun: true })).toEqual({
      outbox: 3,
      pac_attempts: 0,
      webhook_events: 7,
    });
    expect(await keys('SELECT event_id AS k FROM webhook_events')).toHaveLength(7);

    const batches: [string, number][] = [];
    const deleted = await pruneHistory(
      prisma,
      { ...policy, outboxDoneDays: 0 },
      { batchSize: 3, onBatch: (table, n) => batches.push([table, n]) },
    );
    expect(deleted).toEqual({ outbox: 0, pac_attempts: 0, webhook_events: 7 });
    expect(batches).toEqual([
      ['webhook_events', 3],
      ['webhook_events', 3],
      ['webhook_events', 1],
    ]);
    expect(await keys('SELECT stamp_key AS k FROM outbox')).toHaveLength(3);

    // maxBatches bounds one pass; the next pass goes on.
    expect(await pruneHistory(prisma, policy, { batchSize: 2, maxBatches: 1 })).toMatchObject({ outbox: 2 });
    expect(await pruneHistory(prisma, policy, { batchSize: 2, maxBatches: 1 })).toMatchObject({ outbox: 1 });
  });
});
