import { withRelatedUuid, type InvoiceRequestInput, type SaleLine } from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import { type CorrectableInvoice } from '@timbra/db/invoices';
import { paymentById } from '@timbra/db/payments';
import {
  buildIngresoRequest,
  storedPaymentFacts,
  type PaymentFacts,
  type ReceptorInput,
} from '../payments/build-ingreso.ts';
import { DomainError } from '../domain-errors.ts';
import { saleLines, type LineInput } from '../payments/sale.ts';
import type { CorrectInvoiceDeps, CorrectionInput, StoredCorrection } from './correct-invoice.ts';

/**
 * The request a corrected document is frozen from: an Ingreso rebuilt from its payment with the
 * corrections (receptor, forma de pago, TipoCambio, its lines or its one concepto); a factura
 * global, an Egreso or a Pago from its stored request with the fields a correction may change.
 *
 * @throws DomainError validation_failed (a change this document cannot take), not_correctable
 */
export async function correctedRequest(
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
    return correctedIngreso(tx, deps, invoice, input, now);
  }
  return correctedFromStored(invoice, input, now);
}

/** An Ingreso rebuilt from its payment, the corrections applied; the payment's changes to keep. */
async function correctedIngreso(
  tx: Tx,
  deps: CorrectInvoiceDeps,
  invoice: CorrectableInvoice,
  input: CorrectionInput,
  now: Date,
): Promise<StoredCorrection> {
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
    ...(input.concepto ? { conceptos: (built.request.conceptos ?? []).map((c) => ({ ...c, ...input.concepto })) } : {}),
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

/** A document rebuilt from its stored request (a global, an Egreso, a Pago), with a fresh Fecha. */
function correctedFromStored(invoice: CorrectableInvoice, input: CorrectionInput, now: Date): StoredCorrection {
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
