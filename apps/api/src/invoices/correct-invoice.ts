import {
  tryFreeze,
  tryRefreshFecha,
  instantOf,
  STAMP_WINDOW_MS,
  timeZoneForCodigoPostal,
  withRelatedUuid,
  type InvoiceRequestInput,
  type SaleLine,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import {
  freezeVersion,
  holdStampRow,
  insertCorrection,
  insertInvoices,
  takeFolio,
  lockCorrectableInvoice,
  pacsThatReceived,
  recordReplacement,
  replacementOf,
  standingRelatedCount,
  type CorrectableInvoice,
  type CorrectionPayload,
} from '@timbra/db/invoices';
import { paymentById } from '@timbra/db/payments';
import {
  buildIngresoRequest,
  storedPaymentFacts,
  type PaymentFacts,
  type ReceptorInput,
} from '../payments/build-ingreso.ts';
import { DomainError } from '../domain-errors.ts';
import { saleLines, type LineInput } from '../payments/sale.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';

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
  deps: CorrectInvoiceDeps & { emisorId: string },
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
  const folio = await takeFolio(tx, deps.emisorId, serie);
  const stored = await correctedRequest(tx, deps, { ...original, serie, folio }, input, now);
  const request: InvoiceRequestInput = {
    ...stored.request!,
    // Its own business event: the replacement of that invoice (one per invoice: a unique index).
    sourceId: `replacement:${original.id}`,
    cfdiRelacionados: [{ tipoRelacion: '04', uuids: [original.uuid] }],
  };
  const { frozen, problems } = tryFreeze(request, deps.payments.csd, deps.payments.catalogs);
  if (!frozen) return { kind: 'rejected', problems };
  const [invoiceId] = await insertInvoices(tx, deps.emisorId, [
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

async function correctedRequest(
  tx: Tx,
  deps: CorrectInvoiceDeps,
  invoice: CorrectableInvoice,
  input: CorrectionInput,
  now: Date,
): Promise<StoredCorrection> {
  // A factura global (no payment: its tickets') is rebuilt from its stored request, as an Egreso is.
  if (invoice.kind === 'I' && !invoice.paymentId && invoice.request) {
    if (input.receptor || input.concepto || input.conceptos)
      throw new DomainError('validation_failed', undefined, [
        {
          path: input.receptor ? 'receptor' : 'conceptos',
          message: 'a factura global is to público en general, one concepto per ticket: only formaPago can change',
        },
      ]);
  } else if (invoice.kind === 'I') {
    if (!invoice.paymentId) throw new DomainError('not_correctable', 'this Ingreso has no payment to rebuild it from');
    const payment = await paymentById(tx, invoice.paymentId);
    const receptor = input.receptor
      ? completeReceptor({ ...((payment.receptor as Partial<ReceptorInput> | null) ?? {}), ...input.receptor })
      : ((payment.receptor as ReceptorInput | null) ?? null);
    const formaPago = input.formaPago ?? payment.formaPago ?? deps.defaultFormaPago;
    if (input.formaPago && payment.paymentTerms === 'installments')
      throw new DomainError('validation_failed', undefined, [
        { path: 'formaPago', message: 'a sale in installments says 99 on its Ingreso' },
      ]);
    if (input.concepto && input.conceptos)
      throw new DomainError('validation_failed', undefined, [
        { path: 'concepto', message: 'either concepto (a sale of one line) or conceptos (all the lines), not both' },
      ]);
    const corrected = input.conceptos ? await correctedLines(tx, deps, input.conceptos, payment) : undefined;
    const lines = corrected ?? (Array.isArray(payment.lines) ? (payment.lines as unknown as SaleLine[]) : null);
    if (input.concepto && lines && lines.length > 1)
      throw new DomainError('validation_failed', undefined, [
        {
          path: 'concepto',
          message: `this sale has ${lines.length} lines: a concepto correction applies to a sale of one`,
        },
      ]);
    const facts: PaymentFacts = {
      ...storedPaymentFacts(payment, deps.defaultFormaPago),
      receptor,
      formaPago,
      lines,
      ...(input.tipoCambio ? { tipoCambio: { rate: input.tipoCambio, source: 'correction' } } : {}),
    };
    const built = buildIngresoRequest(facts, invoice.serie, invoice.folio, deps.payments.settings, now);
    if (!built.request) throw new DomainError('validation_failed', undefined, built.problems);
    const request: InvoiceRequestInput = {
      ...built.request,
      ...(input.concepto
        ? { conceptos: (built.request.conceptos ?? []).map((c) => ({ ...c, ...input.concepto })) }
        : {}),
    };
    return {
      request,
      payment: {
        id: payment.id,
        ...(input.receptor && receptor ? { receptor } : {}),
        ...(input.formaPago ? { formaPago: input.formaPago } : {}),
        ...(input.tipoCambio && payment.currency !== 'MXN' ? { tipoCambio: input.tipoCambio } : {}),
        ...(corrected ? { lines: corrected } : {}),
      },
    };
  }
  if (!invoice.request)
    throw new DomainError('not_correctable', 'this document was recorded without its request and cannot be rebuilt');
  if (input.concepto || input.conceptos)
    throw new DomainError('validation_failed', undefined, [
      { path: input.concepto ? 'concepto' : 'conceptos', message: 'only an Ingreso’s conceptos can be corrected' },
    ]);
  if (input.formaPago && invoice.kind === 'P')
    throw new DomainError('validation_failed', undefined, [
      { path: 'formaPago', message: 'a Pago’s forma de pago is its installment’s' },
    ]);
  let request = { ...(invoice.request as InvoiceRequestInput), issuedAt: now.toISOString() };
  if (input.receptor) {
    const r = request.receptor;
    const merged = completeReceptor({
      rfc: r.rfc,
      nombre: r.nombre,
      codigoPostal: r.domicilioFiscalReceptor,
      regimenFiscal: r.regimenFiscalReceptor,
      usoCfdi: r.usoCFDI,
      ...input.receptor,
    });
    request = {
      ...request,
      receptor: {
        ...r,
        rfc: merged.rfc,
        nombre: merged.nombre,
        domicilioFiscalReceptor: merged.codigoPostal,
        regimenFiscalReceptor: merged.regimenFiscal,
        usoCFDI: merged.usoCfdi,
      },
    };
  }
  if (input.formaPago) request = { ...request, formaPago: input.formaPago };
  if (input.tipoCambio) request = { ...request, tipoCambio: input.tipoCambio };
  if (invoice.relatedUuid) request = withRelatedUuid(request, invoice.relatedUuid, invoice.relatedXml ?? undefined);
  return { request };
}

const RECEPTOR_FIELDS = ['rfc', 'nombre', 'codigoPostal', 'regimenFiscal', 'usoCfdi'] as const;

function completeReceptor(r: Partial<ReceptorInput>): ReceptorInput {
  const missing = RECEPTOR_FIELDS.filter((f) => !r[f]);
  if (missing.length > 0)
    throw new DomainError(
      'validation_failed',
      undefined,
      missing.map((f) => ({ path: `receptor.${f}`, message: 'is required (the payment has none to keep)' })),
    );
  return {
    rfc: r.rfc!.trim().toUpperCase(),
    nombre: r.nombre!.trim(),
    codigoPostal: r.codigoPostal!,
    regimenFiscal: r.regimenFiscal!,
    usoCfdi: r.usoCfdi!,
  };
}

/**
 * The lines a correction gives an Ingreso, resolved as a REST payment's are (products, defaults) and
 * checked to add up to what was paid — refused with the same codes.
 */
async function correctedLines(
  tx: Tx,
  deps: CorrectInvoiceDeps,
  conceptos: readonly LineInput[],
  payment: { amount: { toFixed(d: number): string }; currency: string },
): Promise<SaleLine[]> {
  const sale = { amount: payment.amount.toFixed(2), currency: payment.currency };
  return (await saleLines({ prisma: tx, settings: deps.payments.settings }, sale, conceptos, 'strict')).lines;
}
