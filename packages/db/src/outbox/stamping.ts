/**
 * The stamp processor's statements: load an outbox row with its frozen bytes and PAC history, and
 * the stamp persisted with the row done and the ledger in one statement (so one transaction). The
 * write-ahead record of each PAC call and a failed attempt's: ledger.ts; dead-lettering: dead-letters.ts.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { statusGuard } from '../invoices/invoice-status.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';
import { plannedOnce } from '../lean.ts';
import { inFlightInsertSql, ledgerUpsertSql, type OfOrganization, type PacCallRecord } from './ledger.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const stampRowColumns = z.object({
  n: col.int,
  id: col.uuid,
  status: col.text,
  stamp_key: col.text,
  invoice_id: col.uuid,
  frozen_xml: z.string().nullable(),
  version: col.int,
  history: z.array(z.object({ pac: col.text, outcome: col.text })),
  recorded: col.bool,
});

const persistStampRow = z.object({ n: col.int, written: col.bool, waiting: col.bool, replaces: col.bool });

/** An outbox row of kind stamp, with what stamping it needs. */
export interface StampRow {
  id: string;
  status: string;
  stampKey: string;
  invoiceId: string;
  frozenXml: string | null;
  /** The version of the frozen document (the one the PAC calls send). */
  version: number;
  /** Every PAC call made for this version so far, oldest first. */
  history: { pac: string; outcome: string }[];
  /** The first PAC call, recorded `in_flight` by the load itself (see `loadStampRows`), if it was. */
  recordedCall?: FirstCall;
}

/**
 * The call a job would make first when nothing pins the document to a PAC: which PAC, and the id
 * of its write-ahead record.
 */
export interface FirstCall {
  pac: string;
  id: string;
}

/** One round trip: the row, its invoice's frozen bytes and version, and that version's PAC-attempt history. */
export async function loadStampRow(db: Db, outboxId: string): Promise<StampRow | undefined> {
  return (await loadStampRows(db, [{ outboxId }]))[0];
}

/**
 * `loadStampRow` for several rows in one round trip (the stamper's concurrent jobs); in the order
 * asked. A row of another organization than the one its item names is not found.
 *
 * An item may name its `firstCall`: when the row has no PAC call yet for its version (so no PAC may
 * hold its stamp), is pending or enqueued and has frozen bytes, that call's write-ahead record is
 * written by this same statement, by the same insert as `recordPacCallsInFlight` (`inFlightInsertSql`)
 * — a job's load and its first write-ahead record are then one commit, not two. Otherwise nothing is
 * written, and the caller records its calls as before.
 */
export async function loadStampRows(
  db: RawDb,
  keys: readonly ({ outboxId: string; firstCall?: FirstCall | undefined } & OfOrganization)[],
): Promise<(StampRow | undefined)[]> {
  const input = keys.map((k, n) => ({
    n,
    outbox_id: k.outboxId,
    given: k.organizationId ?? null,
    pac: k.firstCall?.pac ?? null,
    call_id: k.firstCall?.id ?? null,
  }));
  const outboxIds = keys.map((k) => k.outboxId);
  // Planned once per session (lean.ts): planning was 83% of its time (pg_stat_statements, issue #49).
  const rows = await queryRows(
    db,
    stampRowColumns,
    plannedOnce(Prisma.sql`
      WITH loaded AS (
        SELECT k.n, k.pac, k.call_id, o.id, o.organization_id AS org, o.status, o.stamp_key, o.invoice_id,
               i.frozen_xml, i.version,
               COALESCE((SELECT json_agg(json_build_object('pac', a.pac, 'outcome', a.outcome) ORDER BY a.created_at, a.id)
                         FROM pac_attempts a
                         WHERE a.invoice_id = o.invoice_id AND a.organization_id = o.organization_id AND a.version = i.version),
                        '[]'::json) AS history
        FROM json_to_recordset(${JSON.stringify(input)}::json) AS k(n int, outbox_id uuid, given uuid, pac text, call_id uuid)
        JOIN outbox o ON o.id = k.outbox_id AND o.organization_id = coalesce(k.given, (SELECT timbra_organization_or_sole()))
        JOIN invoices i ON i.id = o.invoice_id AND i.organization_id = o.organization_id
        WHERE o.id = ANY(${outboxIds}::uuid[])
      ), recorded AS (
        ${inFlightInsertSql(
          Prisma.sql`SELECT l.call_id AS id, l.id AS outbox_id, l.org, l.invoice_id, l.version, l.pac
                     FROM loaded l
                     WHERE l.call_id IS NOT NULL AND json_array_length(l.history) = 0 AND l.frozen_xml IS NOT NULL`,
          outboxIds,
        )}
        RETURNING id
      )
      SELECT l.n, l.id, l.status, l.stamp_key, l.invoice_id, l.frozen_xml, l.version, l.history,
             coalesce(l.call_id IN (SELECT id FROM recorded), false) AS recorded
      FROM loaded l`),
  );
  const found = new Array<StampRow | undefined>(keys.length);
  for (const row of rows) {
    const firstCall = keys[row.n]!.firstCall;
    found[row.n] = {
      id: row.id,
      status: row.status,
      stampKey: row.stamp_key,
      invoiceId: row.invoice_id,
      frozenXml: row.frozen_xml,
      version: row.version,
      history: row.history,
      ...(row.recorded && firstCall ? { recordedCall: firstCall } : {}),
    };
  }
  return found;
}

// A stamp lands on an invoice waiting for one (or dead-lettered meanwhile and re-driven); never on an
// invoice whose cancellation is under way.
const STAMPED = statusGuard(['pending', 'stamp_failed'], 'stamped');

export interface PersistedStamp {
  /** False when the invoice had moved on (stamped by another job, or cancelled): nothing written. */
  written: boolean;
  /** Whether documents (Egresos, Pagos) wait for this invoice, as of after its stamp was written (false if not written). */
  dependentsWaiting: boolean;
  /** Whether it replaces another invoice (TipoRelacion 04), which is then to be cancelled with motivo 01. */
  replaces: boolean;
}

/** One stamp to persist: the outbox row and version it answers, the PAC's stamp, and every call made. */
export interface StampToPersist {
  row: { outboxId: string; invoiceId: string; version: number } & OfOrganization;
  stamp: { uuid: string; tfdXml: string; pac: string };
  calls: readonly PacCallRecord[];
}

/**
 * Persists a stamp: UUID and TFD on the invoice (with its frozen bytes, the stamped CFDI: cfdi-core's
 * `stampedXmlOf`; stamped_xml stays NULL), the outbox row done, and every PAC call in the ledger —
 * one statement, so one transaction (invariant 7). Calls an earlier, killed worker left `in_flight`
 * for the invoice are closed `interrupted`: its outcome is known. Only on the version that was sent:
 * a stamp of a version a correction replaced is not written (the proof makes that impossible; the
 * ledger keeps the calls either way).
 */
export async function persistStamp(
  db: Db,
  row: StampToPersist['row'],
  stamp: StampToPersist['stamp'],
  calls: readonly PacCallRecord[],
): Promise<PersistedStamp> {
  return (await persistStamps(db, [{ row, stamp, calls }]))[0]!;
}

/**
 * `persistStamp` for several stamps (the stamper's group commit): each as above, all in one statement
 * and so one commit. Stamps of one invoice (a repeated job) go in statements of their own, in order.
 */
export async function persistStamps(db: RawDb, stamps: readonly StampToPersist[]): Promise<PersistedStamp[]> {
  const results: PersistedStamp[] = new Array<PersistedStamp>(stamps.length);
  // Indexes into `stamps`: each round takes the first stamp of every invoice left, in order.
  for (let rest = [...stamps.keys()]; rest.length > 0;) {
    const first = new Map<string, number>();
    const later: number[] = [];
    for (const i of rest) {
      const invoiceId = stamps[i]!.row.invoiceId;
      if (first.has(invoiceId)) later.push(i);
      else first.set(invoiceId, i);
    }
    const round = [...first.values()];
    const written = await persistDistinctInvoices(
      db,
      round.map((i) => stamps[i]!),
    );
    round.forEach((i, k) => (results[i] = written[k]!));
    rest = later;
  }
  return results;
}

/** One statement for stamps of distinct invoices; a result per stamp, in order. */
async function persistDistinctInvoices(db: RawDb, stamps: readonly StampToPersist[]): Promise<PersistedStamp[]> {
  const input = stamps.map((s, n) => ({
    n,
    outbox_id: s.row.outboxId,
    invoice_id: s.row.invoiceId,
    version: s.row.version,
    uuid: s.stamp.uuid,
    tfd_xml: s.stamp.tfdXml,
    pac: s.stamp.pac,
    given: s.row.organizationId ?? null,
  }));
  const calls = stamps.flatMap((s) =>
    s.calls.map((c) => ({
      ...c,
      invoiceId: s.row.invoiceId,
      version: s.row.version,
      organizationId: s.row.organizationId,
    })),
  );
  // The ids again as arrays: the planner cannot see how many rows json_to_recordset gives (it guesses
  // 100); `id = ANY(…)` lets every write start from its index whatever the guess (EXPLAIN: index
  // scans on invoices_pkey and outbox_pkey for a batch of one on 20 000 invoices).
  const invoiceIds = stamps.map((s) => s.row.invoiceId);
  const outboxIds = stamps.map((s) => s.row.outboxId);
  // Planned once per connection (lean.ts, `plannedOnce`): re-planned at each execution, its planning
  // cost Postgres about as much as all its writes.
  const rows = await queryRows(
    db,
    persistStampRow,
    plannedOnce(Prisma.sql`
      WITH input AS (
        SELECT s.*, coalesce(s.given, (SELECT timbra_organization_or_sole())) AS org
        FROM json_to_recordset(${JSON.stringify(input)}::json)
          AS s(n int, outbox_id uuid, invoice_id uuid, version int, uuid text, tfd_xml text, pac text, given uuid)
      ), stamped AS (
        UPDATE invoices i SET uuid = s.uuid, tfd_xml = s.tfd_xml, stamped_xml = NULL,
               pac = s.pac, stamped_at = now(), status = 'stamped', updated_at = now()
        FROM input s
        WHERE i.id = ANY(${invoiceIds}::uuid[]) AND i.id = s.invoice_id AND i.organization_id = s.org
          AND i.version = s.version AND ${STAMPED}
        RETURNING i.id
      ), done AS (
        UPDATE outbox o SET status = 'done', attempts = o.attempts + 1, last_error = NULL, updated_at = now()
        FROM input s
        WHERE o.id = ANY(${outboxIds}::uuid[]) AND o.id = s.outbox_id AND o.organization_id = s.org
          AND s.invoice_id IN (SELECT id FROM stamped)
        RETURNING o.id
      ), ledger AS (
        ${ledgerUpsertSql(calls)}
        RETURNING id
      ), interrupted AS (
        -- Calls a killed worker left in_flight: the document's outcome is known now (this stamp), so
        -- they are closed as interrupted — the ledger says what happened, and nothing stays open.
        UPDATE pac_attempts a SET outcome = 'interrupted'
        FROM input s
        WHERE a.invoice_id = ANY(${invoiceIds}::uuid[]) AND a.invoice_id = s.invoice_id AND a.organization_id = s.org
          AND s.invoice_id IN (SELECT id FROM stamped) AND a.outcome = 'in_flight'
          AND a.id <> ALL(${calls.flatMap((c) => (c.id ? [c.id] : []))}::uuid[])
        RETURNING a.id
      )
      -- Asked once the UPDATE holds the invoice's lock (the CASE runs it after \`stamped\` is complete),
      -- with a fresh snapshot: a dependent committed while the UPDATE waited for its share lock is seen
      -- (migration 20270113000000), so the stamper needs no second look.
      SELECT s.n, s.invoice_id IN (SELECT id FROM stamped) AS written,
             CASE WHEN s.invoice_id IN (SELECT id FROM stamped) THEN timbra_dependents_waiting(s.invoice_id) ELSE false END AS waiting,
             EXISTS (SELECT 1 FROM invoices r
                     WHERE r.id = s.invoice_id AND r.organization_id = s.org AND r.replaces_invoice_id IS NOT NULL) AS replaces
      FROM input s`),
  );
  const results: PersistedStamp[] = new Array<PersistedStamp>(stamps.length);
  for (const r of rows) results[r.n] = { written: r.written, dependentsWaiting: r.waiting, replaces: r.replaces };
  return results;
}
