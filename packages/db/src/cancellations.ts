import type { Prisma, PrismaClient } from './generated/client.ts';
import { OUTBOX_CHANNEL } from './queues.ts';

/**
 * Inserts a cancel request and the outbox row of kind `cancel` that carries it to the worker, and
 * wakes the relay, in the caller's transaction. The one place a cancellation is written: the API's
 * `POST /v1/invoices/:id/cancel` and the repair of duplicates both come here.
 *
 * @returns the request's id, or undefined when one for this `duplicateUuid` exists already.
 */
export async function insertCancelRequest(
  tx: Prisma.TransactionClient,
  request: { invoiceId: string; motivo: string; folioSustitucion?: string | null; duplicateUuid?: string },
): Promise<string | undefined> {
  const [row] = await tx.$queryRaw<{ id: string }[]>`
    WITH request AS (
      INSERT INTO cancel_requests (id, invoice_id, motivo, folio_sustitucion, duplicate_uuid)
      VALUES (gen_random_uuid(), ${request.invoiceId}::uuid, ${request.motivo}, ${request.folioSustitucion ?? null},
              ${request.duplicateUuid ?? null})
      ON CONFLICT (duplicate_uuid) DO NOTHING
      RETURNING id
    ), outbox AS (
      INSERT INTO outbox (id, kind, invoice_id, stamp_key, cancel_request_id)
      SELECT gen_random_uuid(), 'cancel', ${request.invoiceId}::uuid, 'cancel-' || request.id, request.id FROM request
      RETURNING id
    )
    SELECT request.id, (SELECT count(pg_notify(${OUTBOX_CHANNEL}, outbox.id::text)) FROM outbox) AS notified
    FROM request`;
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
    const [invoice] = await tx.$queryRaw<{ id: string; status: string; uuid: string | null }[]>`
      SELECT id, status, uuid FROM invoices WHERE id = ${input.invoiceId}::uuid FOR UPDATE`;
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
