import { tryFreeze, type InvoiceRequestInput, type ValidationIssue } from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import {
  insertInvoices,
  takeFolio,
  lockCorrectableInvoice,
  recordReplacement,
  replacementOf,
  standingRelatedCount,
} from '@timbra/db/invoices';
import { DomainError } from '../domain-errors.ts';
import { correctedRequest } from './corrected-request.ts';
import type { CorrectInvoiceDeps, CorrectionInput } from './correct-invoice.ts';

export type ReplacementResult =
  { kind: 'rejected'; problems: ValidationIssue[] } | { kind: 'created'; invoiceId: string };

/**
 * Replaces a stamped Ingreso whose data was wrong: a new invoice with the next folio of the serie,
 * built from the payment with the corrections, related to the original with TipoRelacion 04 and
 * frozen now; the worker stamps it, then cancels the original with motivo 01 and FolioSustitucion =
 * its UUID, exactly once (if the receptor rejects that cancellation both stand, and the original's
 * view says so). A rule broken refuses it with nothing written (the folio is given back).
 *
 * @throws DomainError not_found, not_replaceable, validation_failed
 */
export async function replaceInvoice(
  tx: Tx,
  deps: CorrectInvoiceDeps & { organizationId: string },
  originalId: string,
  input: CorrectionInput,
  requestedBy: string,
  now = new Date(),
): Promise<ReplacementResult> {
  const original = await lockCorrectableInvoice(tx, originalId);
  if (!original) throw new DomainError('not_found');
  if (original.kind !== 'I' || original.status !== 'stamped' || !original.uuid)
    throw new DomainError(
      'not_replaceable',
      `only a stamped Ingreso is replaced; this is a ${original.kind} ${original.status}`,
    );
  const earlier = await replacementOf(tx, original.id);
  if (earlier) throw new DomainError('not_replaceable', `already replaced by invoice ${earlier}`);
  const related = await standingRelatedCount(tx, original.id);
  if (related > 0)
    throw new DomainError(
      'not_replaceable',
      `${related} document(s) (Egresos, Pagos) relate to it: the SAT would not cancel it while they stand`,
    );
  const serie = deps.payments.serieIngreso;
  const folio = await takeFolio(tx, deps.organizationId, serie);
  const stored = await correctedRequest(tx, deps, { ...original, serie, folio }, input, now);
  const request: InvoiceRequestInput = {
    ...stored.request!,
    // Its own business event: the replacement of that invoice (one per invoice: a unique index).
    sourceId: `replacement:${original.id}`,
    cfdiRelacionados: [{ tipoRelacion: '04', uuids: [original.uuid] }],
  };
  const { frozen, problems } = tryFreeze(request, deps.payments.csd, deps.payments.catalogs);
  if (!frozen) return { kind: 'rejected', problems };
  const [invoiceId] = await insertInvoices(tx, deps.organizationId, [
    {
      kind: 'I',
      serie,
      folio,
      paymentId: original.paymentId,
      stampKey: frozen.stampKey,
      moneda: frozen.moneda,
      status: 'pending',
      frozen,
      totals: frozen,
    },
  ]);
  await recordReplacement(tx, {
    original,
    replacementId: invoiceId!,
    changes: { ...input },
    reason: input.reason?.trim() || 'replaced',
    requestedBy,
    detail: `replaced by invoice ${invoiceId!} (${serie}-${folio}, TipoRelacion 04); cancelled with motivo 01 once it is stamped`,
    payment: stored.payment && {
      id: stored.payment.id,
      receptor: stored.payment.receptor ? { ...stored.payment.receptor } : undefined,
      formaPago: stored.payment.formaPago,
    },
  });
  return { kind: 'created', invoiceId: invoiceId! };
}
