/**
 * Corrections: a request to re-freeze an invoice (PATCH /v1/invoices/:id, or the worker's own for a
 * late one) waits here while the worker proves that no PAC stamped the old version, then is settled
 * — applied by `freezeVersion` (versions.ts), or refused. And the late invoices: pending ones whose
 * Fecha is about to leave the PACs' 72-hour window, counted for the gauge and, when the operator
 * switched it on, given a correction of their own.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { holdStampRow, type CorrectionPayload } from './versions.ts';
import { col, execute, queryRows, type Tx } from '../sql.ts';

const idRow = z.object({ id: col.uuid });
const correctionRow = z.object({
  id: col.uuid,
  invoice_id: col.uuid,
  from_version: col.int,
  request: col.json,
  reason: col.text,
  requested_by: col.text,
  attempts: col.int,
});

export interface NewCorrection {
  invoiceId: string;
  changes: unknown;
  /** The corrected request (frozen with a fresh Fecha when applied). */
  request: unknown;
  reason: string;
  requestedBy: string;
  fromVersion: number;
  /** `applied` with `toVersion` when it was frozen at once (nothing to prove). */
  applied?: { toVersion: number };
}

/** Records a correction (one proving per invoice: a second one fails on a unique index). @returns its id. */
export async function insertCorrection(tx: Tx, c: NewCorrection): Promise<string> {
  const [row] = await queryRows(
    tx,
    idRow,
    Prisma.sql`
      INSERT INTO invoice_corrections (id, invoice_id, status, changes, request, reason, requested_by, from_version, to_version)
      VALUES (timbra_uuid7(), ${c.invoiceId}::uuid, ${c.applied ? 'applied' : 'proving'},
              ${JSON.stringify(c.changes)}::jsonb, ${JSON.stringify(c.request)}::jsonb, ${c.reason}, ${c.requestedBy},
              ${c.fromVersion}, ${c.applied?.toVersion ?? null})
      RETURNING id`,
  );
  return row!.id;
}

/** A correction waiting for its proof. */
export interface ProvingCorrection {
  id: string;
  invoiceId: string;
  fromVersion: number;
  request: unknown;
  reason: string;
  requestedBy: string;
  attempts: number;
}

/** Claims corrections whose next look is due (FOR UPDATE SKIP LOCKED), in the caller's transaction. */
export async function claimDueCorrections(tx: Tx, limit: number): Promise<ProvingCorrection[]> {
  const rows = await queryRows(
    tx,
    correctionRow,
    Prisma.sql`
      SELECT id, invoice_id, from_version, request, reason, requested_by, attempts FROM invoice_corrections
      WHERE status = 'proving' AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`,
  );
  return rows.map((r) => ({
    id: r.id,
    invoiceId: r.invoice_id,
    fromVersion: r.from_version,
    request: r.request,
    reason: r.reason,
    requestedBy: r.requested_by,
    attempts: r.attempts,
  }));
}

/**
 * A correction's outcome: applied (with the version it made), refused (with why), or a later look
 * `retryInMs` from now — the database's now, the clock `claimDueCorrections` compares with.
 */
export type CorrectionOutcome =
  | { status: 'applied'; toVersion: number }
  | { status: 'refused'; code: string; detail: string }
  | { status: 'proving'; code: string; detail: string; retryInMs: number };

export async function settleCorrection(tx: Tx, correctionId: string, outcome: CorrectionOutcome): Promise<void> {
  await execute(
    tx,
    Prisma.sql`
      UPDATE invoice_corrections SET status = ${outcome.status}, attempts = attempts + 1, updated_at = now(),
             to_version = ${outcome.status === 'applied' ? outcome.toVersion : null},
             code = ${outcome.status === 'applied' ? null : outcome.code},
             detail = ${outcome.status === 'applied' ? null : outcome.detail.slice(0, 2000)},
             next_attempt_at = now() + make_interval(secs => ${outcome.status === 'proving' ? outcome.retryInMs / 1000 : 0}::float8)
      WHERE id = ${correctionId}::uuid AND status = 'proving'`,
  );
}

/**
 * The late pending invoices (the database function timbra_late_invoices owns the rule: Fecha, read in
 * Mexico's easternmost zone, leaving the PACs' window within `marginMs`; not ambiguous; no
 * correction under way), against the application's `now` (Fecha is written with its clock).
 */
function lateInvoicesSql(windowMs: number, marginMs: number, now: Date): Prisma.Sql {
  return Prisma.sql`SELECT id FROM timbra_late_invoices(${windowMs}::float8, ${marginMs}::float8, ${now}::timestamptz)`;
}

/**
 * The operator's switch (AUTO_REFREEZE_LATE): each late invoice gets a correction that re-freezes the
 * same document with a fresh Fecha (`refresh`), its stamp row held — one transaction; the proof and
 * the new version follow as for any correction. Invoices locked by someone else are skipped.
 * @returns the invoices it started a correction for.
 */
export async function startLateRefreezes(
  tx: Tx,
  windowMs: number,
  marginMs: number,
  limit: number,
  now = new Date(),
): Promise<string[]> {
  const rows = await queryRows(
    tx,
    z.object({ id: col.uuid, version: col.int }),
    Prisma.sql`
      SELECT i.id, i.version FROM invoices i WHERE i.id IN (SELECT l.id FROM (${lateInvoicesSql(windowMs, marginMs, now)}) l)
      ORDER BY i.created_at LIMIT ${limit}
      FOR UPDATE OF i SKIP LOCKED`,
  );
  for (const r of rows) {
    await holdStampRow(tx, r.id);
    await insertCorrection(tx, {
      invoiceId: r.id,
      changes: { reason: 'Fecha leaving the stamping window' },
      request: { refresh: true } satisfies CorrectionPayload,
      reason: 'Fecha leaving the stamping window',
      requestedBy: 'worker',
      fromVersion: r.version,
    });
  }
  return rows.map((r) => r.id);
}
