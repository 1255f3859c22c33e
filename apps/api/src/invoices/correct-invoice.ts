import {
  tryFreeze,
  tryRefreshFecha,
  instantOf,
  STAMP_WINDOW_MS,
  timeZoneForCodigoPostal,
  type InvoiceRequestInput,
  type SaleLine,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import {
  freezeVersion,
  holdStampRow,
  insertCorrection,
  lockCorrectableInvoice,
  pacsThatReceived,
  type CorrectableInvoice,
  type CorrectionPayload,
} from '@timbra/db/invoices';
import type { ReceptorInput } from '../payments/build-ingreso.ts';
import { DomainError } from '../domain-errors.ts';
import type { LineInput } from '../payments/sale.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import { correctedRequest } from './corrected-request.ts';

/** What a correction may change (PATCH /v1/invoices/:id): all optional, at least one. */
export interface CorrectionInput {
  /** The customer's fiscal data; fields left out keep their value. */
  receptor?: Partial<ReceptorInput>;
  /** TipoCambio (MXN per unit of the currency), for an invoice not in MXN. */
  tipoCambio?: string;
  /** c_FormaPago (an Ingreso paid at once, or an Egreso). */
  formaPago?: string;
  /** The concepto of a single-concepto Ingreso: its SAT keys and description (the amount is the payment's). */
  concepto?: { claveProdServ?: string; claveUnidad?: string; descripcion?: string };
  /** An Ingreso's lines, all of them anew (as POST /v1/payments takes them): they must add up to the payment. */
  conceptos?: readonly LineInput[];
  /** Why (kept with the version). */
  reason?: string;
}

/** What a correction stores (CorrectionPayload), with the request typed. */
export interface StoredCorrection extends CorrectionPayload {
  request?: InvoiceRequestInput;
  payment?: { id: string; receptor?: ReceptorInput; formaPago?: string; tipoCambio?: string; lines?: SaleLine[] };
}

export interface CorrectInvoiceDeps {
  payments: RecordPaymentDeps;
  /** FormaPago of a payment recorded without one. */
  defaultFormaPago: string;
  /** A pending invoice may be corrected once its Fecha is this close to leaving the PAC's window. */
  lateMarginMs: number;
}

export type CorrectionResult =
  | { kind: 'rejected'; problems: ValidationIssue[] }
  | { kind: 'applied'; correctionId: string; version: number }
  | { kind: 'proving'; correctionId: string };

/**
 * Corrects an invoice that is not stamped: the corrected document is checked by the SAT rules (a
 * broken one is refused, nothing written), then frozen as a new version under the same serie-folio
 * with a fresh Fecha, and stamped through the outbox.
 *
 * - Never sent to a PAC (`needs_data`, or a dead letter no PAC processed): frozen now (`applied`).
 * - Sent to a PAC (`stamp_failed` after a rejection, or `pending` with a Fecha about to leave the
 *   72-hour window): the stamp row is held and the correction recorded `proving`; the worker asks
 *   every PAC that received the version whether it stamped it, and freezes the new one only when all
 *   say no (a stamp found is recorded instead).
 *
 * @throws DomainError not_found, not_correctable, correction_in_progress, validation_failed
 */
export async function correctInvoice(
  tx: Tx,
  deps: CorrectInvoiceDeps,
  invoiceId: string,
  input: CorrectionInput,
  requestedBy: string,
  now = new Date(),
): Promise<CorrectionResult> {
  const invoice = await lockCorrectableInvoice(tx, invoiceId);
  if (!invoice) throw new DomainError('not_found');
  if (invoice.openCorrection)
    throw new DomainError('correction_in_progress', `correction ${invoice.openCorrection} is still being proved`);
  assertCorrectable(invoice, deps, now);

  // Nothing but a reason, on a frozen document: the same document with a fresh Fecha.
  const refresh = invoice.frozenXml !== null && Object.keys(input).every((k) => k === 'reason');
  const stored: StoredCorrection = refresh ? { refresh: true } : await correctedRequest(tx, deps, invoice, input, now);
  // Frozen now: what the rules refuse is known before anything is written, and the document is the
  // new version when nobody has to be asked (the worker freezes its own after a proof).
  const { frozen, problems } = refresh
    ? tryRefreshFecha(invoice.frozenXml!, deps.payments.csd, now, deps.payments.catalogs)
    : tryFreeze({ ...stored.request, issuedAt: now.toISOString() }, deps.payments.csd, deps.payments.catalogs);
  if (!frozen) return { kind: 'rejected', problems };
  const reason = input.reason?.trim() || 'corrected';
  const changes = { ...input, ...(input.reason ? {} : { reason }) };

  const nobodyToAsk =
    invoice.frozenXml === null ||
    (invoice.status === 'stamp_failed' && (await pacsThatReceived(tx, invoice.id, invoice.version, 0)).length === 0);
  if (!nobodyToAsk) {
    await holdStampRow(tx, invoice.id);
    const correctionId = await insertCorrection(tx, {
      invoiceId: invoice.id,
      changes,
      request: stored,
      reason,
      requestedBy,
      fromVersion: invoice.version,
    });
    return { kind: 'proving', correctionId };
  }
  const version = await freezeVersion(tx, {
    invoiceId: invoice.id,
    fromVersion: invoice.version,
    frozen,
    reason,
    createdBy: requestedBy,
    ...(stored.payment ? { payment: stored.payment } : {}),
  });
  if (version === undefined) throw new DomainError('not_correctable', 'the invoice changed meanwhile; retry');
  const correctionId = await insertCorrection(tx, {
    invoiceId: invoice.id,
    changes,
    request: stored,
    reason,
    requestedBy,
    fromVersion: invoice.version,
    applied: { toVersion: version },
  });
  return { kind: 'applied', correctionId, version };
}

function assertCorrectable(invoice: CorrectableInvoice, deps: CorrectInvoiceDeps, now: Date): void {
  switch (invoice.status) {
    case 'needs_data':
    case 'stamp_failed':
      return;
    case 'pending': {
      const zone = timeZoneForCodigoPostal(lugarOf(invoice.frozenXml) ?? '');
      const issued = invoice.fecha ? instantOf(invoice.fecha, zone).getTime() : invoice.versionFrozenAt.getTime();
      const leavesWindowAt = issued + STAMP_WINDOW_MS;
      if (now.getTime() >= leavesWindowAt - deps.lateMarginMs) return;
      throw new DomainError(
        'not_correctable',
        `the invoice is pending and its Fecha can still be stamped until ${new Date(leavesWindowAt).toISOString()}; ` +
          'a correction is possible once it is dead-lettered or within the late margin of that time',
      );
    }
    case 'waiting':
      throw new DomainError('not_correctable', 'the invoice waits for its related invoice to be stamped');
    default:
      throw new DomainError(
        'not_correctable',
        `the invoice is ${invoice.status}: a stamped CFDI is replaced, not corrected (POST /v1/invoices/${invoice.id}/replace)`,
      );
  }
}

function lugarOf(xml: string | null): string | undefined {
  return xml ? /LugarExpedicion="(\d{5})"/.exec(xml)?.[1] : undefined;
}
