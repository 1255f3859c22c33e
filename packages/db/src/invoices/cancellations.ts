/**
 * Cancel requests: written with the outbox row of kind `cancel` that carries each to the worker, the
 * row the cancel processor loads, and how a cancellation ends.
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { lockInvoice } from './invoices.ts';
import { statusGuard } from './invoice-status.ts';
import { notifyOutboxSql, outboxInsertSql } from '../outbox/outbox.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const insertCancelRequestRow = z.object({ id: col.uuid });
const cancelRowColumns = z.object({
  outbox_status: col.text,
  request_id: col.uuid,
  request_status: col.text,
  motivo: z.enum(['01', '02', '03', '04']),
  folio_sustitucion: z.string().nullable(),
  duplicate_uuid: z.string().nullable(),
  polls: col.int,
  invoice_id: col.uuid,
  uuid: z.string().nullable(),
  total: col.text,
  pac: z.string().nullable(),
  frozen_xml: z.string().nullable(),
});

/**
 * Inserts a cancel request and its outbox row, and wakes the relay, in the caller's transaction. The
 * one place a cancellation is written: the API's `POST /v1/invoices/:id/cancel` and the repair of
 * duplicates both come here.
 *
 * @returns the request's id, or undefined when one for this `duplicateUuid` exists already.
 */
export async function insertCancelRequest(
  tx: RawDb,
  request: { invoiceId: string; motivo: string; folioSustitucion?: string | null; duplicateUuid?: string },
): Promise<string | undefined> {
  const [row] = await queryRows(
    tx,
    insertCancelRequestRow,
    Prisma.sql`
      WITH request AS (
        INSERT INTO cancel_requests (id, invoice_id, motivo, folio_sustitucion, duplicate_uuid)
        VALUES (timbra_uuid7(), ${request.invoiceId}::uuid, ${request.motivo}, ${request.folioSustitucion ?? null},
                ${request.duplicateUuid ?? null})
        ON CONFLICT (duplicate_uuid, organization_id) WHERE duplicate_uuid IS NOT NULL DO NOTHING
        RETURNING id
      ), outbox AS (
        ${outboxInsertSql(Prisma.sql`
          SELECT 'cancel' AS kind, ${request.invoiceId}::uuid AS invoice_id, 'cancel-' || request.id AS stamp_key,
                 request.id AS cancel_request_id, NULL::uuid AS organization_id
          FROM request`)}
      )
      SELECT request.id, ${notifyOutboxSql(Prisma.sql`outbox`)} AS notified FROM request`,
  );
  return row?.id;
}

export type DuplicateCancellation =
  | { ok: true; cancelRequestId: string; created: boolean }
  | { ok: false; reason: 'not_found' | 'not_stamped' | 'same_uuid' };

/**
 * Queues the cancellation of a duplicate of an invoice's CFDI — a second UUID a PAC issued for the
 * same document, found by reconciliation — with motivo 01 and the invoice's own UUID as
 * FolioSustitucion: the kept CFDI replaces the duplicate. The invoice itself is not touched (it stays
 * stamped; never both). Idempotent per duplicate UUID. The worker carries it like any cancellation.
 */
export async function requestDuplicateCancellation(
  prisma: PrismaClient,
  input: { invoiceId: string; duplicateUuid: string },
): Promise<DuplicateCancellation> {
  return prisma.$transaction(async (tx) => {
    const invoice = await lockInvoice(tx, input.invoiceId);
    if (!invoice) return { ok: false, reason: 'not_found' } as const;
    if (!invoice.uuid || !['stamped', 'cancel_requested'].includes(invoice.status))
      return { ok: false, reason: 'not_stamped' } as const;
    const duplicate = input.duplicateUuid.toUpperCase();
    if (duplicate === invoice.uuid.toUpperCase()) return { ok: false, reason: 'same_uuid' } as const;
    const created = await insertCancelRequest(tx, {
      invoiceId: invoice.id,
      motivo: '01',
      folioSustitucion: invoice.uuid.toUpperCase(),
      duplicateUuid: duplicate,
    });
    if (created) return { ok: true, cancelRequestId: created, created: true } as const;
    const existing = await tx.cancelRequest.findUniqueOrThrow({ where: { duplicateUuid: duplicate } });
    return { ok: true, cancelRequestId: existing.id, created: false } as const;
  });
}

export type ReplacedCancellation =
  | { requested: true; originalId: string; cancelRequestId: string }
  | {
      requested: false;
      reason: 'not_a_replacement' | 'not_stamped' | 'original_not_stamped' | 'already_requested' | 'related_documents';
      originalId?: string;
    };

const CANCEL_FOR_REPLACEMENT = statusGuard(['stamped'], 'cancel_requested');

/**
 * Once a replacement (TipoRelacion 04) is stamped, the invoice it replaces is cancelled with motivo 01
 * and FolioSustitucion = the replacement's UUID: its cancel request and outbox row written and the
 * original moved to `cancel_requested`, in one transaction under the original's lock. Exactly once:
 * never again after a request with that substitute exists (if the receptor rejected it, both CFDIs
 * stand and the original's view says so). Skipped while documents (Egresos, Pagos) relate to the
 * original: the SAT would refuse it.
 */
export async function requestReplacedCancellation(
  prisma: PrismaClient,
  replacementId: string,
): Promise<ReplacedCancellation> {
  return prisma.$transaction(async (tx) => {
    const replacement = await tx.invoice.findUnique({
      where: { id: replacementId },
      select: { uuid: true, status: true, replacesInvoiceId: true },
    });
    if (!replacement?.replacesInvoiceId) return { requested: false, reason: 'not_a_replacement' } as const;
    const originalId = replacement.replacesInvoiceId;
    if (!replacement.uuid || replacement.status !== 'stamped')
      return { requested: false, reason: 'not_stamped', originalId } as const;
    const original = await lockInvoice(tx, originalId);
    const substitute = replacement.uuid.toUpperCase();
    const earlier = await tx.cancelRequest.count({
      where: { invoiceId: originalId, motivo: '01', folioSustitucion: substitute, duplicateUuid: null },
    });
    if (earlier > 0) return { requested: false, reason: 'already_requested', originalId } as const;
    if (original?.status !== 'stamped')
      return { requested: false, reason: 'original_not_stamped', originalId } as const;
    const related = await tx.invoice.count({ where: { relatedInvoiceId: originalId, status: { not: 'cancelled' } } });
    if (related > 0) return { requested: false, reason: 'related_documents', originalId } as const;
    const id = await insertCancelRequest(tx, { invoiceId: originalId, motivo: '01', folioSustitucion: substitute });
    const moved = await tx.$executeRaw`UPDATE invoices SET status = 'cancel_requested', updated_at = now()
                                       WHERE id = ${originalId}::uuid AND ${CANCEL_FOR_REPLACEMENT}`;
    if (!id || moved !== 1)
      throw new Error(`invoice ${originalId}: the replaced invoice's cancellation was not written`);
    return { requested: true, originalId, cancelRequestId: id } as const;
  });
}

/**
 * Stamped replacements whose original is still stamped with no motivo-01 request naming them (the
 * sweeper's net, every organization every minute): read from invoices_stamped_replacements_idx.
 */
export async function replacementsAwaitingCancellation(db: RawDb, limit: number): Promise<string[]> {
  const rows = await queryRows(
    db,
    z.object({ id: col.uuid }),
    Prisma.sql`
      SELECT r.id FROM invoices r JOIN invoices o ON o.id = r.replaces_invoice_id
      WHERE r.status = 'stamped' AND r.replaces_invoice_id IS NOT NULL AND o.status = 'stamped'
        AND NOT EXISTS (SELECT 1 FROM cancel_requests c WHERE c.invoice_id = o.id AND c.motivo = '01'
                                                         AND c.folio_sustitucion = upper(r.uuid) AND c.duplicate_uuid IS NULL)
      LIMIT ${limit}`,
  );
  return rows.map((r) => r.id);
}

/** An outbox row of kind cancel, with its request and the invoice it cancels. */
export interface CancelRow {
  outboxStatus: string;
  requestId: string;
  requestStatus: string;
  /** c_Motivo de cancelación (a CHECK constraint allows no other). */
  motivo: '01' | '02' | '03' | '04';
  folioSustitucion: string | null;
  duplicateUuid: string | null;
  polls: number;
  invoiceId: string;
  uuid: string | null;
  total: string;
  pac: string | null;
  frozenXml: string | null;
}

/** One round trip: the outbox row, its cancel request and the invoice. */
export async function loadCancelRow(db: RawDb, outboxId: string): Promise<CancelRow | undefined> {
  const [row] = await queryRows(
    db,
    cancelRowColumns,
    Prisma.sql`
      SELECT o.status AS outbox_status, c.id AS request_id, c.status AS request_status, c.motivo,
             c.folio_sustitucion, c.duplicate_uuid, c.polls, i.id AS invoice_id, i.uuid, i.total::text, i.pac, i.frozen_xml
      FROM outbox o JOIN cancel_requests c ON c.id = o.cancel_request_id JOIN invoices i ON i.id = o.invoice_id
      WHERE o.id = ${outboxId}::uuid`,
  );
  return (
    row && {
      outboxStatus: row.outbox_status,
      requestId: row.request_id,
      requestStatus: row.request_status,
      motivo: row.motivo,
      folioSustitucion: row.folio_sustitucion,
      duplicateUuid: row.duplicate_uuid,
      polls: row.polls,
      invoiceId: row.invoice_id,
      uuid: row.uuid,
      total: row.total,
      pac: row.pac,
      frozenXml: row.frozen_xml,
    }
  );
}

/**
 * Ends a cancellation: its request, the invoice (cancelled, or stamped again — from cancel_requested
 * only) and the outbox row, in one transaction. Cancelling a duplicate leaves the invoice — the kept
 * CFDI — as it is.
 */
export async function finishCancellation(
  prisma: PrismaClient,
  row: { requestId: string; invoiceId: string; duplicateUuid: string | null },
  outcome: 'cancelled' | 'rejected' | 'failed',
  reason: string | null,
  estatusCancelacion?: string,
): Promise<void> {
  // Interactive, not a batch: an organization client runs no batch transaction (organizations/clients.ts).
  await prisma.$transaction(async (tx) => {
    await tx.cancelRequest.update({
      where: { id: row.requestId },
      data: { status: outcome, reason, ...(estatusCancelacion ? { estatusCancelacion } : {}) },
    });
    if (!row.duplicateUuid)
      await tx.invoice.updateMany({
        where: { id: row.invoiceId, status: 'cancel_requested' },
        data: { status: outcome === 'cancelled' ? 'cancelled' : 'stamped' },
      });
    await tx.outboxRow.updateMany({
      where: { cancelRequestId: row.requestId },
      // Done either way: the request records how it ended; a new cancellation is a new request.
      data: { status: 'done', ...(reason ? { lastError: reason } : {}) },
    });
  });
}

/** The PAC accepted the cancellation request: its code and acuse; the SAT's answer is followed next. */
export async function markCancellationAccepted(
  db: Db,
  requestId: string,
  accepted: { uuidCode: string; acuse: string | null; pac: string },
): Promise<void> {
  await db.cancelRequest.update({ where: { id: requestId }, data: { status: 'accepted', ...accepted } });
}

/** One more look at the SAT that was not final yet (En proceso, or the SAT has not caught up). */
export async function recordCancellationPoll(db: Db, requestId: string, estatus: string): Promise<void> {
  await db.cancelRequest.update({
    where: { id: requestId },
    data: { polls: { increment: 1 }, estatusCancelacion: estatus },
  });
}
