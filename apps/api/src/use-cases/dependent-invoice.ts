import { stampKeyFor, tryFreeze, withRelatedUuid, type Csd, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { OUTBOX_CHANNEL, type Prisma } from '@timbra/db';

type Tx = Prisma.TransactionClient;

/** The invoice a dependent document relates to (an Egreso's or a Pago's Ingreso). */
export interface OriginalInvoice {
  id: string;
  status: string;
  uuid: string | null;
}

/** Where a document waiting for `original` stands; `blocked` when `original` cannot be stamped as it is. */
export function waitingFor(original: OriginalInvoice) {
  return {
    invoiceId: original.id,
    status: original.status,
    blocked: original.status === 'stamp_failed' || original.status === 'needs_data',
  };
}

/** Takes the next folio of `serie` (its counter row stays locked until commit: gapless). */
export async function takeFolio(tx: Tx, emisorId: string, serie: string): Promise<number> {
  const [counter] = await tx.$queryRaw<{ folio: number }[]>`
    UPDATE series SET next_folio = next_folio + 1
    WHERE emisor_id = ${emisorId}::uuid AND serie = ${serie}
    RETURNING next_folio - 1 AS folio`;
  if (!counter) throw new Error(`serie ${serie} is not configured`);
  return counter.folio;
}

/**
 * Writes a dependent document (an Egreso or a Pago) in the caller's transaction. If its original
 * is stamped, it is frozen now with the original's UUID (`pending`, with its outbox row and a
 * NOTIFY; `needs_data` with the reasons when its data is invalid); otherwise it is written
 * `waiting` with its request, and the worker freezes it when the original is stamped.
 */
export async function writeDependentInvoice(
  tx: Tx,
  deps: { csd: Csd; emisorId: string; emisorRfc: string },
  doc: {
    kind: 'E' | 'P';
    request: InvoiceRequestInput;
    folio: number;
    paymentId: string;
    original: OriginalInvoice;
    /** Its SubTotal and Total until it is frozen. */
    totals: { subTotal: string; total: string };
    link: { refundId: string } | { installmentId: string };
  },
): Promise<{ id: string; status: string }> {
  const stamped = doc.original.status === 'stamped' && doc.original.uuid !== null;
  const { frozen, problems } = stamped ? tryFreeze(withRelatedUuid(doc.request, doc.original.uuid!), deps.csd) : {};
  const status = frozen ? 'pending' : stamped ? 'needs_data' : 'waiting';
  const totals = frozen ? { subTotal: frozen.subTotal, total: frozen.total } : doc.totals;
  const stampKey = stampKeyFor(deps.emisorRfc, doc.kind, doc.request.sourceId);
  const refundId = 'refundId' in doc.link ? doc.link.refundId : null;
  const installmentId = 'installmentId' in doc.link ? doc.link.installmentId : null;
  const [row] = await tx.$queryRaw<{ id: string }[]>`
    WITH invoice AS (
      INSERT INTO invoices (id, emisor_id, payment_id, refund_id, installment_id, related_invoice_id, kind, serie, folio,
                            fecha, moneda, sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original, request)
      VALUES (gen_random_uuid(), ${deps.emisorId}::uuid, ${doc.paymentId}::uuid, ${refundId}::uuid, ${installmentId}::uuid,
              ${doc.original.id}::uuid, ${doc.kind}, ${doc.request.serie}, ${doc.folio}, ${frozen?.fecha ?? null},
              ${doc.request.moneda}, ${totals.subTotal}::numeric, ${totals.total}::numeric, ${status},
              ${problems ? JSON.stringify(problems) : null}::jsonb, ${stampKey}, ${frozen?.xml ?? null},
              ${frozen?.cadenaOriginal ?? null}, ${frozen ? null : JSON.stringify(doc.request)}::jsonb)
      RETURNING id, stamp_key, status
    ), outbox AS (
      INSERT INTO outbox (id, kind, invoice_id, stamp_key)
      SELECT gen_random_uuid(), 'stamp', id, stamp_key FROM invoice WHERE status = 'pending'
      RETURNING id
    )
    SELECT invoice.id, (SELECT count(pg_notify(${OUTBOX_CHANNEL}, outbox.id::text)) FROM outbox) AS notified
    FROM invoice`;
  return { id: row!.id, status };
}
