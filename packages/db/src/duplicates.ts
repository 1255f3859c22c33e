import type { PrismaClient } from './generated/client.ts';

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
    const [created] = await tx.$queryRaw<{ id: string }[]>`
      WITH request AS (
        INSERT INTO cancel_requests (id, invoice_id, motivo, folio_sustitucion, duplicate_uuid)
        VALUES (gen_random_uuid(), ${invoice.id}::uuid, '01', ${invoice.uuid.toUpperCase()}, ${duplicate})
        ON CONFLICT (duplicate_uuid) DO NOTHING
        RETURNING id
      ), outbox AS (
        INSERT INTO outbox (id, kind, invoice_id, stamp_key, cancel_request_id)
        SELECT gen_random_uuid(), 'cancel', ${invoice.id}::uuid, 'cancel-' || request.id, request.id FROM request
        RETURNING id
      )
      SELECT request.id, (SELECT count(pg_notify('timbra_outbox', outbox.id::text)) FROM outbox) AS notified
      FROM request`;
    if (created) return { ok: true, cancelRequestId: created.id, created: true } as const;
    const existing = await tx.cancelRequest.findUniqueOrThrow({ where: { duplicateUuid: duplicate } });
    return { ok: true, cancelRequestId: existing.id, created: false } as const;
  });
}
