/**
 * The stamp processor's statements: load an outbox row with its frozen bytes and PAC history, the
 * write-ahead record of each PAC call, and the two endings — the stamp persisted with the row done and
 * the ledger in one statement (so one transaction), or the failure recorded / dead-lettered.
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { statusGuard } from './invoice-status.ts';
import { col, queryRows, type Db } from './sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const stampRowColumns = z.object({
  id: col.uuid,
  status: col.text,
  stamp_key: col.text,
  invoice_id: col.uuid,
  frozen_xml: z.string().nullable(),
  version: col.int,
  history: z.array(z.object({ pac: col.text, outcome: col.text })),
});
const persistStampRow = z.object({ invoice_id: z.string().nullable(), waiting: col.bool, replaces: col.bool });

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
}

/** One round trip: the row, its invoice's frozen bytes and version, and that version's PAC-attempt history. */
export async function loadStampRow(db: Db, outboxId: string): Promise<StampRow | undefined> {
  const [row] = await queryRows(
    db,
    stampRowColumns,
    Prisma.sql`
      SELECT o.id, o.status, o.stamp_key, o.invoice_id, i.frozen_xml, i.version,
             COALESCE((SELECT json_agg(json_build_object('pac', a.pac, 'outcome', a.outcome) ORDER BY a.created_at, a.id)
                       FROM pac_attempts a WHERE a.invoice_id = o.invoice_id AND a.version = i.version), '[]'::json) AS history
      FROM outbox o JOIN invoices i ON i.id = o.invoice_id
      WHERE o.id = ${outboxId}::uuid`,
  );
  return (
    row && {
      id: row.id,
      status: row.status,
      stampKey: row.stamp_key,
      invoiceId: row.invoice_id,
      frozenXml: row.frozen_xml,
      version: row.version,
      history: row.history,
    }
  );
}

/** A PAC call as the ledger keeps it. `id` is the write-ahead row's, when one was written. */
export interface PacCallRecord {
  id?: string;
  pac: string;
  outcome: string;
  uuid?: string;
  code?: string;
  durationMs: number;
}

/**
 * Write-ahead: records a PAC call `in_flight` (committed) before it is made; its outcome is written on
 * the same row after. A worker killed during the call leaves the row, so the next attempt stays with
 * that PAC, which may have stamped.
 *
 * Only while the outbox row is pending or enqueued and the invoice still at `version`: a correction
 * holds the row (FOR SHARE here waits for it) before it asks the PACs whether they stamped the
 * version, so no call can start after that question. @returns false when the call must not be made.
 */
export async function recordPacCallInFlight(
  db: Db,
  call: { outboxId: string; invoiceId: string; version: number; pac: string; id: string },
): Promise<boolean> {
  const written = await db.$executeRaw`
    INSERT INTO pac_attempts (id, invoice_id, pac, outcome, version, duration_ms)
    SELECT ${call.id}::uuid, ${call.invoiceId}::uuid, ${call.pac}, 'in_flight', ${call.version}, 0
    WHERE EXISTS (SELECT 1 FROM outbox o JOIN invoices i ON i.id = o.invoice_id
                  WHERE o.id = ${call.outboxId}::uuid AND o.status IN ('pending', 'enqueued') AND i.version = ${call.version}
                  FOR SHARE OF o)`;
  return written === 1;
}

/**
 * The ledger write: each call's `in_flight` row (by its id) gets its outcome; a call without one (a
 * circuit-open skip) gets a row of its own.
 */
function ledgerUpsertSql(invoiceId: string, version: number, calls: readonly PacCallRecord[]): Prisma.Sql {
  const entries = calls.map((a) => ({
    id: a.id ?? null,
    pac: a.pac,
    outcome: a.outcome,
    uuid: a.uuid ?? null,
    code: a.code ?? null,
    duration_ms: a.durationMs,
  }));
  return Prisma.sql`
    INSERT INTO pac_attempts (id, invoice_id, pac, outcome, uuid, code, version, duration_ms)
    SELECT COALESCE(a.id, timbra_uuid7()), ${invoiceId}::uuid, a.pac, a.outcome, a.uuid, a.code, ${version}, a.duration_ms
    FROM json_to_recordset(${JSON.stringify(entries)}::json)
         AS a(id uuid, pac text, outcome text, uuid text, code text, duration_ms int)
    ON CONFLICT (id) DO UPDATE
      SET outcome = EXCLUDED.outcome, uuid = EXCLUDED.uuid, code = EXCLUDED.code, duration_ms = EXCLUDED.duration_ms`;
}

// A stamp lands on an invoice waiting for one (or dead-lettered meanwhile and re-driven); never on an
// invoice whose cancellation is under way.
const STAMPED = statusGuard(['pending', 'stamp_failed'], 'stamped');

export interface PersistedStamp {
  /** False when the invoice had moved on (stamped by another job, or cancelled): nothing written. */
  written: boolean;
  /** Whether documents (Egresos, Pagos) wait for this invoice. */
  dependentsWaiting: boolean;
  /** Whether it replaces another invoice (TipoRelacion 04), which is then to be cancelled with motivo 01. */
  replaces: boolean;
}

/**
 * Persists a stamp: UUID, TFD and stamped XML on the invoice, the outbox row done, and every PAC call
 * in the ledger — one statement, so one transaction (invariant 7). Calls an earlier, killed worker
 * left `in_flight` for the invoice are closed `interrupted`: its outcome is known. Only on the version that was sent:
 * a stamp of a version a correction replaced is not written (the proof makes that impossible; the
 * ledger keeps the calls either way).
 */
export async function persistStamp(
  db: Db,
  row: { outboxId: string; invoiceId: string; version: number },
  stamp: { uuid: string; tfdXml: string; stampedXml: string; pac: string },
  calls: readonly PacCallRecord[],
): Promise<PersistedStamp> {
  const [written] = await queryRows(
    db,
    persistStampRow,
    Prisma.sql`
      WITH stamped AS (
        UPDATE invoices SET uuid = ${stamp.uuid}, tfd_xml = ${stamp.tfdXml}, stamped_xml = ${stamp.stampedXml},
               pac = ${stamp.pac}, stamped_at = now(), status = 'stamped', updated_at = now()
        WHERE id = ${row.invoiceId}::uuid AND version = ${row.version} AND ${STAMPED}
        RETURNING id
      ), done AS (
        UPDATE outbox SET status = 'done', attempts = attempts + 1, last_error = NULL, updated_at = now()
        WHERE id = ${row.outboxId}::uuid AND EXISTS (SELECT 1 FROM stamped)
        RETURNING id
      ), ledger AS (
        ${ledgerUpsertSql(row.invoiceId, row.version, calls)}
        RETURNING id
      ), interrupted AS (
        -- Calls a killed worker left in_flight: the document's outcome is known now (this stamp), so
        -- they are closed as interrupted — the ledger says what happened, and nothing stays open.
        UPDATE pac_attempts SET outcome = 'interrupted'
        WHERE invoice_id = ${row.invoiceId}::uuid AND outcome = 'in_flight' AND EXISTS (SELECT 1 FROM stamped)
          AND id <> ALL(${calls.flatMap((c) => (c.id ? [c.id] : []))}::uuid[])
        RETURNING id
      )
      SELECT (SELECT id FROM stamped) AS invoice_id, (SELECT count(*) FROM ledger)::int AS recorded,
             (SELECT count(*) FROM interrupted)::int AS interrupted,
             (SELECT count(*) FROM done)::int AS done,
             EXISTS (SELECT 1 FROM invoices WHERE related_invoice_id = ${row.invoiceId}::uuid AND status = 'waiting') AS waiting,
             EXISTS (SELECT 1 FROM invoices WHERE id = ${row.invoiceId}::uuid AND replaces_invoice_id IS NOT NULL) AS replaces`,
  );
  return {
    written: Boolean(written?.invoice_id),
    dependentsWaiting: written?.waiting ?? false,
    replaces: written?.replaces ?? false,
  };
}

/** Records a failed stamping attempt: its PAC calls in the ledger and the error on the row, together. */
export async function recordFailedAttempt(
  prisma: PrismaClient,
  row: { outboxId: string; invoiceId: string; version: number },
  calls: readonly PacCallRecord[],
  lastError: string,
): Promise<void> {
  await prisma.$transaction([
    prisma.$executeRaw`${ledgerUpsertSql(row.invoiceId, row.version, calls)}`,
    prisma.outboxRow.update({
      where: { id: row.outboxId },
      data: { attempts: { increment: 1 }, lastError: lastError.slice(0, 2000) },
    }),
  ]);
}

const DEAD_LETTERED = statusGuard(['pending'], 'stamp_failed');

const deadLetteredRow = z.object({ failed_at: z.date() });

/**
 * Dead-letters an outbox row: the row `failed` (from pending or enqueued: a row a correction holds
 * stays held), its invoice `stamp_failed` (from pending), in one transaction. @returns when it failed
 * by the database's clock (the clock of the re-drives a letter is settled against) and how many
 * documents wait for this invoice (blocked with it), or undefined when the row was not dead-lettered
 * (a correction holds it, or it is done).
 */
export async function deadLetterOutboxRow(
  prisma: PrismaClient,
  row: { outboxId: string; invoiceId: string },
  lastError: string,
): Promise<{ failedAt: Date; waitingDependents: number } | undefined> {
  return prisma.$transaction(async (tx) => {
    const [failed] = await queryRows(
      tx,
      deadLetteredRow,
      Prisma.sql`UPDATE outbox SET status = 'failed', last_error = ${lastError.slice(0, 2000)}, updated_at = now()
        WHERE id = ${row.outboxId}::uuid AND status IN ('pending', 'enqueued')
        RETURNING now() AS failed_at`,
    );
    if (!failed) return undefined;
    await tx.$executeRaw`UPDATE invoices SET status = 'stamp_failed', updated_at = now() WHERE id = ${row.invoiceId}::uuid AND ${DEAD_LETTERED}`;
    const waitingDependents = await tx.invoice.count({ where: { relatedInvoiceId: row.invoiceId, status: 'waiting' } });
    return { failedAt: failed.failed_at, waitingDependents };
  });
}
