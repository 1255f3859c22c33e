import {
  stampKeyFor,
  tryFreeze,
  withRelatedUuid,
  type Csd,
  type InvoiceRequestInput,
  type OperatorCatalogs,
} from '@timbra/cfdi-core';
import type { RawDb } from '@timbra/db';
import { insertInvoices, lockInvoiceShared, type InvoiceState } from '@timbra/db/invoices';

/** The invoice a dependent document relates to (an Egreso's or a Pago's Ingreso). */
export type OriginalInvoice = InvoiceState;

/** Where a document waiting for `original` stands; `blocked` when `original` cannot be stamped as it is. */
export function waitingFor(original: OriginalInvoice) {
  return {
    invoiceId: original.id,
    status: original.status,
    blocked: original.status === 'stamp_failed' || original.status === 'needs_data',
  };
}

/**
 * Writes a dependent document (an Egreso or a Pago) in the caller's transaction. If its original
 * is stamped, it is frozen now with the original's UUID (`pending`, with its outbox row and a
 * NOTIFY; `needs_data` with the reasons when its data is invalid); otherwise it is written
 * `waiting` with its request, and the worker freezes it when the original is stamped.
 */
export async function writeDependentInvoice(
  tx: RawDb,
  deps: {
    csd: Csd;
    catalogs?: OperatorCatalogs | undefined;
    organizationId: string;
    settings: { emisor: { rfc: string } };
  },
  doc: {
    kind: 'E' | 'P';
    request: InvoiceRequestInput;
    folio: number;
    paymentId: string;
    original: OriginalInvoice;
    /** The original's frozen document, when known: a Pago reports its taxes. */
    originalXml?: string | null;
    /** Its SubTotal and Total until it is frozen. */
    totals: { subTotal: string; total: string };
    link: { refundId: string } | { installmentId: string };
  },
): Promise<{ id: string; status: string }> {
  // Read again under a share lock: a stamp of the original in flight waits for this transaction (and
  // the worker then finds this document waiting), or committed before and is seen here.
  const original = (await lockInvoiceShared(tx, doc.original.id)) ?? doc.original;
  const stamped = original.status === 'stamped' && original.uuid !== null;
  const { frozen, problems } = stamped
    ? tryFreeze(withRelatedUuid(doc.request, original.uuid!, doc.originalXml ?? undefined), deps.csd, deps.catalogs)
    : {};
  const status = frozen ? 'pending' : stamped ? 'needs_data' : 'waiting';
  const [id] = await insertInvoices(tx, deps.organizationId, [
    {
      kind: doc.kind,
      serie: doc.request.serie!, // the build-* functions always set it
      folio: doc.folio,
      paymentId: doc.paymentId,
      refundId: 'refundId' in doc.link ? doc.link.refundId : null,
      installmentId: 'installmentId' in doc.link ? doc.link.installmentId : null,
      relatedInvoiceId: doc.original.id,
      stampKey: stampKeyFor(deps.settings.emisor.rfc, doc.kind, doc.request.sourceId),
      moneda: doc.request.moneda ?? 'MXN',
      status,
      frozen,
      totals: doc.totals,
      problems,
      // Kept even once frozen: a correction of an Egreso or a Pago is rebuilt from it.
      request: doc.request,
    },
  ]);
  return { id: id!, status };
}
