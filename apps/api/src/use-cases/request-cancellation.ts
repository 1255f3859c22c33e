import { assertTransition, insertCancelRequest, type InvoiceStatus, type Prisma } from '@timbra/db';
import { ApiError } from '../errors.ts';

type Tx = Prisma.TransactionClient;

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
 * @throws ApiError not_found; not_cancellable (409) unless the invoice is stamped and no document
 *   that relates to it (an Egreso, a Pago) stands;
 *   validation_failed (422) when motivo 01's substitute is not another stamped invoice of ours.
 * @returns the cancel request's id.
 */
export async function requestCancellation(tx: Tx, input: CancellationInput): Promise<string> {
  const [invoice] = await tx.$queryRaw<{ id: string; status: InvoiceStatus; uuid: string | null }[]>`
    SELECT id, status, uuid FROM invoices WHERE id = ${input.invoiceId}::uuid FOR UPDATE`;
  if (!invoice) throw new ApiError('not_found');
  if (invoice.status !== 'stamped' || !invoice.uuid)
    throw new ApiError('not_cancellable', `Only a stamped invoice can be cancelled; this one is ${invoice.status}.`);
  // The SAT does not cancel a CFDI that others relate to (an Egreso, a Pago) while they stand.
  const [{ related }] = (await tx.$queryRaw<{ related: number }[]>`
    SELECT count(*)::int AS related FROM invoices
    WHERE related_invoice_id = ${invoice.id}::uuid AND status <> 'cancelled'`) as [{ related: number }];
  if (related > 0)
    throw new ApiError(
      'not_cancellable',
      `${related} related document(s) (Egresos, Pagos) refer to this invoice: cancel them first.`,
    );
  if (input.motivo === '01') {
    const [substitute] = await tx.$queryRaw<{ id: string; status: string }[]>`
      SELECT id, status FROM invoices WHERE upper(uuid) = upper(${input.folioSustitucion ?? ''})`;
    if (!substitute || substitute.status !== 'stamped' || substitute.id === invoice.id)
      throw new ApiError('validation_failed', undefined, [
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
  await tx.$executeRaw`UPDATE invoices SET status = 'cancel_requested', updated_at = now() WHERE id = ${invoice.id}::uuid`;
  return id;
}
