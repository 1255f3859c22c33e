import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { leanDb, type PrismaClient } from '../src/index.ts';
import { lockInvoiceShared } from '../src/invoices/index.ts';
import { loadStampRows, persistStamps, recordPacCallsInFlight, type StampToPersist } from '../src/outbox/index.ts';
import { lockPayment } from '../src/payments/index.ts';
import { databaseWithEmisor, TEST_EMISOR_ID } from '../src/testing.ts';

// The stamper's statements for several jobs at once (its group commit): each job gets what it would
// have got alone, in one statement. Sent as the stamper sends them: on the lean runner (node-postgres).

let prisma: PrismaClient;
let sql: pg.Client;
let close: () => Promise<void>;
let db: { url: string };
const EMISOR = TEST_EMISOR_ID;

beforeAll(async () => {
  ({ db, prisma, sql, close } = await databaseWithEmisor());
});
afterAll(() => close());

let folio = 0;
/** A frozen invoice (pending, or stamped already) with its stamp outbox row in `rowStatus`. */
async function frozen(status: 'pending' | 'stamped' = 'pending', rowStatus = 'enqueued') {
  folio++;
  const key = `k-${folio}-${randomUUID()}`;
  const { rows } = await sql.query<{ id: string }>(
    `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, frozen_xml)
     VALUES (gen_random_uuid(), $1, 'I', 'A', $2, 'MXN', 1, 1, 'pending', $3, '<cfdi/>') RETURNING id`,
    [EMISOR, folio, key],
  );
  const invoiceId = rows[0]!.id;
  // (Written pending, then moved as the status rules allow.)
  if (status === 'stamped') await sql.query(`UPDATE invoices SET status = 'stamped' WHERE id = $1`, [invoiceId]);
  const outbox = await sql.query<{ id: string }>(
    `INSERT INTO outbox (id, kind, invoice_id, stamp_key, status) VALUES (gen_random_uuid(), 'stamp', $1, $2, $3) RETURNING id`,
    [invoiceId, key, rowStatus],
  );
  return { invoiceId, outboxId: outbox.rows[0]!.id, version: 1 };
}

const stampOf = (n: number) => ({
  uuid: `UUID-${n}-${randomUUID()}`.toUpperCase(),
  tfdXml: `<tfd n="${n}"/>`,
  pac: 'primary',
});

describe('the stamper’s statements, several jobs at once', () => {
  it('loads several rows in one statement, in the order asked, with each version’s PAC history', async () => {
    const a = await frozen();
    const b = await frozen();
    await sql.query(
      `INSERT INTO pac_attempts (id, invoice_id, pac, outcome, version, duration_ms) VALUES (gen_random_uuid(), $1, 'primary', 'ambiguous', 1, 5)`,
      [b.invoiceId],
    );
    const missing = randomUUID();
    const rows = await loadStampRows(
      leanDb(prisma),
      [b.outboxId, missing, a.outboxId].map((outboxId) => ({ outboxId })),
    );
    expect(rows.map((r) => r?.invoiceId)).toEqual([b.invoiceId, undefined, a.invoiceId]);
    expect(rows[0]!.history).toEqual([{ pac: 'primary', outcome: 'ambiguous' }]);
    expect(rows[2]).toMatchObject({ status: 'enqueued', frozenXml: '<cfdi/>', version: 1, history: [] });
  });

  it('records calls in flight only for rows still pending or enqueued at the version sent', async () => {
    const open = await frozen();
    const done = await frozen('stamped', 'done');
    const held = await frozen('pending', 'held');
    const calls = [open, done, held, { ...open, version: 2 }].map((r) => ({ ...r, pac: 'primary', id: randomUUID() }));
    expect(await recordPacCallsInFlight(leanDb(prisma), calls)).toEqual([true, false, false, false]);
    const { rows } = await sql.query<{ id: string }>(`SELECT id FROM pac_attempts WHERE outcome = 'in_flight'`);
    expect(rows.map((r) => r.id)).toContain(calls[0]!.id);
    expect(rows.map((r) => r.id)).not.toContain(calls[1]!.id);
  });

  it('records a first call with the load only for a row no PAC may hold: no call yet, pending or enqueued', async () => {
    const open = await frozen();
    const pending = await frozen('pending', 'pending');
    const called = await frozen();
    await recordPacCallsInFlight(leanDb(prisma), [{ ...called, pac: 'primary', id: randomUUID() }]);
    const done = await frozen('stamped', 'done');
    const held = await frozen('pending', 'held');
    const unasked = await frozen();
    const rows = [open, pending, called, done, held, unasked];
    const firstCalls = rows.map((r) => (r === unasked ? undefined : { pac: 'backup', id: randomUUID() }));
    const loaded = await loadStampRows(
      leanDb(prisma),
      rows.map((r, n) => ({ outboxId: r.outboxId, firstCall: firstCalls[n] })),
    );
    expect(loaded.map((r) => r?.recordedCall?.id)).toEqual([
      firstCalls[0]!.id,
      firstCalls[1]!.id,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    // What was loaded is what the row was before the record: the history the job decides on.
    expect(loaded[0]).toMatchObject({ status: 'enqueued', history: [] });
    expect(loaded[2]!.history).toEqual([{ pac: 'primary', outcome: 'in_flight' }]);
    const { rows: inFlight } = await sql.query<{ id: string; invoice_id: string; pac: string; version: number }>(
      `SELECT id, invoice_id, pac, version FROM pac_attempts WHERE id = ANY($1::uuid[])`,
      [firstCalls.flatMap((c) => (c ? [c.id] : []))],
    );
    expect(inFlight.sort((x, y) => x.id.localeCompare(y.id))).toEqual(
      [0, 1]
        .map((n) => ({ id: firstCalls[n]!.id, invoice_id: rows[n]!.invoiceId, pac: 'backup', version: 1 }))
        .sort((x, y) => x.id.localeCompare(y.id)),
    );
  });

  it('persists several stamps in one statement: each invoice stamped with its row done and its ledger; a moved-on one untouched', async () => {
    const one = await frozen();
    const two = await frozen();
    const movedOn = await frozen('stamped', 'enqueued');
    // A call a killed worker left in flight for `two`: closed as interrupted by its stamp.
    const killed = randomUUID();
    await recordPacCallsInFlight(leanDb(prisma), [{ ...two, pac: 'primary', id: killed }]);
    const items: StampToPersist[] = [one, two, movedOn].map((row, n) => ({
      row,
      stamp: stampOf(n),
      calls: [{ pac: 'primary', outcome: 'stamped', uuid: stampOf(n).uuid, durationMs: 40 + n }],
    }));
    const results = await persistStamps(leanDb(prisma), items);
    expect(results.map((r) => r.written)).toEqual([true, true, false]);
    const invoices = await sql.query<{
      id: string;
      status: string;
      uuid: string | null;
      tfd_xml: string | null;
      stamped_xml: string | null;
    }>(`SELECT id, status, uuid, tfd_xml, stamped_xml FROM invoices WHERE id = ANY($1::uuid[])`, [
      [one.invoiceId, two.invoiceId, movedOn.invoiceId],
    ]);
    const byId = new Map(invoices.rows.map((r) => [r.id, r]));
    expect(byId.get(one.invoiceId)).toMatchObject({
      status: 'stamped',
      uuid: items[0]!.stamp.uuid,
      tfd_xml: '<tfd n="0"/>',
      // The stamped CFDI is the frozen bytes with the TFD (cfdi-core stampedXmlOf): not stored twice.
      stamped_xml: null,
    });
    expect(byId.get(two.invoiceId)).toMatchObject({ status: 'stamped', uuid: items[1]!.stamp.uuid });
    expect(byId.get(movedOn.invoiceId)).toMatchObject({ status: 'stamped', uuid: null });
    const outbox = await sql.query<{ invoice_id: string; status: string }>(
      `SELECT invoice_id, status FROM outbox WHERE invoice_id = ANY($1::uuid[])`,
      [[one.invoiceId, two.invoiceId, movedOn.invoiceId]],
    );
    expect(Object.fromEntries(outbox.rows.map((r) => [r.invoice_id, r.status]))).toEqual({
      [one.invoiceId]: 'done',
      [two.invoiceId]: 'done',
      [movedOn.invoiceId]: 'enqueued',
    });
    // Every call in the ledger, each under its own invoice (the moved-on one's too); the killed call closed.
    const ledger = await sql.query<{ invoice_id: string; outcome: string; duration_ms: number }>(
      `SELECT invoice_id, outcome, duration_ms FROM pac_attempts WHERE invoice_id = ANY($1::uuid[]) ORDER BY duration_ms`,
      [[one.invoiceId, two.invoiceId, movedOn.invoiceId]],
    );
    expect(ledger.rows.map((r) => [r.invoice_id, r.outcome, r.duration_ms])).toEqual([
      [two.invoiceId, 'interrupted', 0],
      [one.invoiceId, 'stamped', 40],
      [two.invoiceId, 'stamped', 41],
      [movedOn.invoiceId, 'stamped', 42],
    ]);
  });

  it('two stamps of one invoice in a batch (a repeated job): the first lands, the second finds it moved on', async () => {
    const row = await frozen();
    // An Egreso waiting for it (written waiting, as the API writes one before its Ingreso is stamped).
    folio++;
    await sql.query(
      `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, related_invoice_id)
       VALUES (gen_random_uuid(), $1, 'E', 'NC', $2, 'MXN', 1, 1, 'waiting', $3, $4)`,
      [EMISOR, folio, `egreso-${folio}`, row.invoiceId],
    );
    const stamp = stampOf(9);
    const item = { row, stamp, calls: [{ pac: 'primary', outcome: 'stamped', uuid: stamp.uuid, durationMs: 1 }] };
    const results = await persistStamps(leanDb(prisma), [item, { ...item, calls: [] }]);
    expect(results).toEqual([
      { written: true, dependentsWaiting: true, replaces: false },
      { written: false, dependentsWaiting: false, replaces: false },
    ]);
  });

  it('sees a dependent written while the stamp waited for the share lock its writer held', async () => {
    const row = await frozen();
    // The API's refund, as it writes an Egreso: the Ingreso read under a share lock (still pending)…
    const watcher = new pg.Client({ connectionString: db.url });
    await watcher.connect();
    await sql.query('BEGIN');
    try {
      await sql.query(`SELECT status FROM invoices WHERE id = $1 FOR SHARE`, [row.invoiceId]);
      // …the stamp's statement begins and waits for that lock…
      const persisted = persistStamps(leanDb(prisma), [{ row, stamp: stampOf(11), calls: [] }]);
      // (Watched as the owner: the app's role does not see other sessions' statements.)
      for (let waited = 0; ; waited += 50) {
        const { rows } = await watcher.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE invoices i SET uuid%'`,
        );
        if (rows[0]!.n > 0) break;
        if (waited > 10_000) throw new Error('the stamp never waited for the lock');
        await new Promise((r) => setTimeout(r, 50));
      }
      // …and the Egreso is written waiting and committed after the stamp's statement began.
      folio++;
      await sql.query(
        `INSERT INTO invoices (id, organization_id, kind, serie, folio, moneda, sub_total, total, status, stamp_key, related_invoice_id)
         VALUES (gen_random_uuid(), $1, 'E', 'NC', $2, 'MXN', 1, 1, 'waiting', $3, $4)`,
        [EMISOR, folio, `egreso-${folio}`, row.invoiceId],
      );
      await sql.query('COMMIT');
      // The statement's own snapshot does not hold the Egreso; its answer must (no second look follows).
      expect(await persisted).toEqual([{ written: true, dependentsWaiting: true, replaces: false }]);
    } finally {
      await sql.query('ROLLBACK').catch(() => undefined);
      await watcher.end();
    }
  });
});

describe('a refund and the stamp of its Ingreso, at the same time', () => {
  // The refund locks the payment, then reads the Ingreso under a share lock; the stamp updates the
  // Ingreso, whose event names the payment (a foreign key: FOR KEY SHARE on it). The payment's lock
  // must not block that key share, or each waits for the other: a deadlock, once 500s to clients.
  it('the payment locked for a refund does not hold up the stamp of its Ingreso', async () => {
    const row = await frozen();
    const paymentId = randomUUID();
    await sql.query(
      `INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at) VALUES ($1, 'api:t', $2, 10, 'MXN', now())`,
      [paymentId, paymentId],
    );
    await sql.query(`UPDATE invoices SET payment_id = $1 WHERE id = $2`, [paymentId, row.invoiceId]);
    await prisma.$transaction(
      async (refund) => {
        expect(await lockPayment(refund, { id: paymentId })).toMatchObject({ id: paymentId });
        // The stamp, on the pool's other connection, while the refund holds the payment. Blocked, it
        // would still wait when this transaction expires (before the fix: the test failed there).
        const [persisted] = await persistStamps(leanDb(prisma), [{ row, stamp: stampOf(1), calls: [] }]);
        expect(persisted?.written).toBe(true);
        expect(await lockInvoiceShared(refund, row.invoiceId)).toMatchObject({ status: 'stamped' });
      },
      { timeout: 8_000 },
    );
  });
});
