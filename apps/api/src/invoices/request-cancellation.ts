import type { RawDb } from '@timbra/db';
import {
  assertTransition,
  insertCancelRequest,
  invoiceByUuid,
  lockInvoice,
  markCancelRequested,
  standingRelatedCount,
} from '@timbra/db/invoices';
import { DomainError } from '../domain-errors.ts';

export interface CancellationInput {
  invoiceId: string;
  motivo: '01' | '02' | '03' | '04';
  /** With motivo 01: the UUID of the stamped CFDI that replaces this one. */
  folioSustitucion?: string;
}

/**
 * Requests the cancellation of a stamped invoice, in the caller's transaction: the cancel request,
 * its outbox row (kind `cancel`, which the worker carries to the PAC and then follows at the SAT)
 * and the invoice's move to `cancel_requested`, under a lock on the invoice's row.
 *
 * @throws DomainError not_found; not_cancellable (409) unless the invoice is stamped and no document
 *   that relates to it (an Egreso, a Pago) stands;
 *   validation_failed (422) when motivo 01's substitute is not another stamped invoice of ours.
 * @returns the cancel request's id.
 */
export async function requestCancellation(tx: RawDb, input: CancellationInput): Promise<string> {
  const invoice = await lockInvoice(tx, input.invoiceId);
  if (!invoice) throw new DomainError('not_found');
  if (invoice.status !== 'stamped' || !invoice.uuid)
    throw new DomainError('not_cancellable', `Only a stamped invoice can be cancelled; this one is ${invoice.status}.`);
  // The SAT does not cancel a CFDI that others relate to (an Egreso, a Pago) while they stand.
  const related = await standingRelatedCount(tx, invoice.id);
  if (related > 0)
    throw new DomainError(
      'not_cancellable',
      `${related} related document(s) (Egresos, Pagos) refer to this invoice: cancel them first.`,
    );
  if (input.motivo === '01') {
    const substitute = await invoiceByUuid(tx, input.folioSustitucion ?? '');
    if (!substitute || substitute.status !== 'stamped' || substitute.id === invoice.id)
      throw new DomainError('validation_failed', undefined, [
        { path: 'folioSustitucion', message: 'must be the UUID of another stamped invoice of this emisor' },
      ]);
  }
  assertTransition(invoice.status, 'cancel_requested');
  const id = await insertCancelRequest(tx, {
    invoiceId: invoice.id,
    motivo: input.motivo,
    folioSustitucion: input.folioSustitucion?.toUpperCase() ?? null,
  });
  if (!id) throw new Error('the cancel request was not written'); // only a duplicate's can conflict
  if (!(await markCancelRequested(tx, invoice.id))) throw new Error('the invoice did not move to cancel_requested');
  return id;
}
