import {
  conceptosForSale,
  formatFecha,
  isBlank,
  NOMBRE_PUBLICO_GENERAL,
  RFC_PUBLICO_GENERAL,
  rfcKind,
  usoCfdiFor,
  timeZoneForCodigoPostal,
  type InvoiceRequestInput,
  type SaleLine,
  type ValidationIssue,
  sourceIdIn,
} from '@timbra/cfdi-core';

/** The customer's fiscal data, as a payment carries it (Stripe metadata, MP metadata, REST body). */
export interface ReceptorInput {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  codigoPostal: string;
  usoCfdi: string;
  /** A foreign receptor's (XEXX010101000) country (c_Pais, not MEX) and tax id there. */
  residenciaFiscal?: string;
  numRegIdTrib?: string;
}

/**
 * The receptor a sale names, with público en general written out (XAXX010101000, PUBLICO EN GENERAL)
 * read as no receptor: the sale is to the general public either way, and only the omitted form gets
 * its InformacionGlobal (CFDI40130) and goes to the period's global in global mode.
 */
export function namedReceptor(receptor: ReceptorInput | null | undefined): ReceptorInput | null {
  if (!receptor) return null;
  const publico =
    receptor.rfc.trim().toUpperCase() === RFC_PUBLICO_GENERAL &&
    receptor.nombre.trim().toUpperCase().replace(/\s+/g, ' ') === NOMBRE_PUBLICO_GENERAL;
  return publico ? null : receptor;
}

export interface InvoiceSettings {
  /** `test`: a test organization's (its documents' sources apart from the live one's). */
  emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string; test?: boolean };
  concepto: { claveProdServ: string; claveUnidad: string; descripcion: string };
  ivaTasa: string;
  periodicidad: string;
}

export interface PaymentFacts {
  provider: string;
  externalId: string;
  /** Total paid, taxes included, as a decimal string. */
  amount: string;
  currency: string;
  occurredAt: Date;
  receptor: ReceptorInput | null;
  description: string | null;
  formaPago: string;
  /** `installments`: a PPD Ingreso (FormaPago 99), paid later with Pagos. Default `single` (PUE). */
  paymentTerms?: 'single' | 'installments';
  /** The sale's lines, resolved (sale.ts). Absent or null: one concepto for the whole amount (`defaultLine`). */
  lines?: SaleLine[] | null;
  /** The customer the receptor data was copied from. */
  customerId?: string | null;
  /** Where the customer's copy (XML + PDF) is emailed once stamped: given with the sale, else the customer's. */
  email?: string | null;
  /** TipoCambio of a sale in another currency, and where it came from (exchange-rates.ts). */
  tipoCambio?: { rate: string; source: string } | null;
  /** The merchant's own strings, kept on the payment; never in the CFDI. */
  metadata?: Record<string, string>;
  /** Why the Ingreso cannot be frozen as the sale stands (found while resolving it): it waits in needs_data. */
  problems?: readonly ValidationIssue[];
}

/** A payment row as stored (what `storedPaymentFacts` reads). */
export interface StoredPayment {
  provider: string;
  externalId: string;
  amount: { toFixed(decimals: number): string };
  currency: string;
  occurredAt: Date;
  receptor: unknown;
  description: string | null;
  formaPago: string | null;
  paymentTerms: string;
  lines: unknown;
  tipoCambio: { toFixed(): string } | null;
  tipoCambioSource: string | null;
}

/**
 * The facts of a recorded payment, to build its Ingreso again (a correction, self-invoicing: each
 * overrides what it changes). FormaPago: the payment's, else `defaultFormaPago`.
 */
export function storedPaymentFacts(payment: StoredPayment, defaultFormaPago: string): PaymentFacts {
  return {
    provider: payment.provider,
    externalId: payment.externalId,
    amount: payment.amount.toFixed(2),
    currency: payment.currency,
    occurredAt: payment.occurredAt,
    receptor: (payment.receptor as ReceptorInput | null) ?? null,
    description: payment.description,
    formaPago: payment.formaPago ?? defaultFormaPago,
    paymentTerms: payment.paymentTerms === 'installments' ? 'installments' : 'single',
    lines: Array.isArray(payment.lines) ? (payment.lines as SaleLine[]) : null,
    tipoCambio:
      payment.tipoCambio && payment.tipoCambioSource
        ? { rate: payment.tipoCambio.toFixed(), source: payment.tipoCambioSource }
        : null,
  };
}

/**
 * The stamp key's source: the business event, not our row id (the same for every retry), in the
 * emisor's books (a test organization's apart: cfdi-core's sourceIdIn).
 */
export function ingresoSourceId(
  facts: Pick<PaymentFacts, 'provider' | 'externalId'>,
  emisor: { test?: boolean | undefined },
): string {
  return sourceIdIn(emisor, `${facts.provider}:${facts.externalId}`);
}

/**
 * The one line of a sale that names none: the deployment's concepto (CONCEPTO_*), the whole amount
 * with the emisor's IVA (IVA_TASA) included, the payment's description.
 */
export function defaultLine(
  facts: Pick<PaymentFacts, 'amount' | 'externalId' | 'description'>,
  settings: InvoiceSettings,
): SaleLine {
  return {
    claveProdServ: settings.concepto.claveProdServ,
    claveUnidad: settings.concepto.claveUnidad,
    // No NoIdentificacion: it names a product (a SKU, a part number), and the payment's id
    // (a provider's `pi_…`, a REST externalId) printed beside the description means nothing to the
    // customer. A line naming a product carries its reference (sale.ts).
    // A provider's description that prints blank (NBSP, zero-width spaces) is no description.
    descripcion:
      facts.description && !isBlank(facts.description) ? facts.description.trim() : settings.concepto.descripcion,
    cantidad: '1',
    amount: facts.amount,
    taxIncluded: true,
    taxes: { iva: settings.ivaTasa },
  };
}

/** The lines a payment was sold with: its own, or the default one. */
export function linesOf(
  facts: Pick<PaymentFacts, 'lines' | 'amount' | 'externalId' | 'description'>,
  settings: InvoiceSettings,
): SaleLine[] {
  return facts.lines && facts.lines.length > 0 ? facts.lines : [defaultLine(facts, settings)];
}

/**
 * The Ingreso request for a payment: one concepto per line of the sale, its bases solved so that the
 * CFDI's Total is exactly the amount (cfdi-core conceptosForSale). Without receptor data the CFDI goes
 * to público en general, with InformacionGlobal for the month of the payment. Fecha is `issuedAt` —
 * when the document is frozen — not the payment's time. A sale in another currency carries its
 * TipoCambio.
 *
 * @returns the request, or why there is none (lines that do not add up, problems found resolving the sale).
 */
export function buildIngresoRequest(
  facts: PaymentFacts,
  serie: string,
  folio: number,
  settings: InvoiceSettings,
  issuedAt: Date,
): { request: InvoiceRequestInput; problems?: undefined } | { request?: undefined; problems: ValidationIssue[] } {
  if (facts.problems && facts.problems.length > 0) return { problems: [...facts.problems] };
  const plan = conceptosForSale(linesOf(facts, settings), facts.currency, facts.amount);
  if (!plan.ok) return { problems: plan.issues };
  const zone = timeZoneForCodigoPostal(settings.emisor.lugarExpedicion);
  const local = formatFecha(facts.occurredAt, zone);
  const receptor = receptorFor(facts.receptor, settings);
  const request: InvoiceRequestInput = {
    tipoDeComprobante: 'I',
    sourceId: ingresoSourceId(facts, settings.emisor),
    issuedAt: issuedAt.toISOString(),
    serie,
    folio: String(folio),
    lugarExpedicion: settings.emisor.lugarExpedicion,
    moneda: facts.currency,
    ...(facts.currency !== 'MXN' && facts.tipoCambio ? { tipoCambio: facts.tipoCambio.rate } : {}),
    ...(facts.paymentTerms === 'installments'
      ? { formaPago: '99', metodoPago: 'PPD' }
      : { formaPago: facts.formaPago, metodoPago: 'PUE' }),
    emisor: { rfc: settings.emisor.rfc, nombre: settings.emisor.nombre, regimenFiscal: settings.emisor.regimenFiscal },
    receptor,
    ...(facts.receptor
      ? {}
      : {
          informacionGlobal: {
            periodicidad: settings.periodicidad,
            meses: mesesFor(settings.periodicidad, local),
            año: Number(local.slice(0, 4)),
          },
        }),
    conceptos: plan.conceptos,
  };
  return { request };
}

/**
 * The CFDI Receptor for a customer's fiscal data, or público en general (RFC XAXX010101000,
 * régimen 616, the emisor's CP, UsoCFDI S01) without it. `usoCfdi`, when given, replaces the
 * customer's own with the first of those uses that c_UsoCFDI allows for the customer's persona and
 * régimen (an Egreso: G02, else S01 — a salaried customer in 605 may not receive G02; a Pago: CP01).
 */
export function receptorFor(
  receptor: ReceptorInput | null,
  settings: InvoiceSettings,
  usoCfdi?: readonly string[],
): InvoiceRequestInput['receptor'] {
  if (!receptor)
    return {
      rfc: RFC_PUBLICO_GENERAL,
      nombre: NOMBRE_PUBLICO_GENERAL,
      domicilioFiscalReceptor: settings.emisor.lugarExpedicion,
      regimenFiscalReceptor: '616',
      usoCFDI: 'S01',
    };
  return {
    rfc: receptor.rfc,
    nombre: receptor.nombre,
    domicilioFiscalReceptor: receptor.codigoPostal,
    regimenFiscalReceptor: receptor.regimenFiscal,
    usoCFDI: usoCfdi === undefined ? receptor.usoCfdi : dependentUsoCfdi(usoCfdi, receptor),
    ...(receptor.residenciaFiscal ? { residenciaFiscal: receptor.residenciaFiscal } : {}),
    ...(receptor.numRegIdTrib ? { numRegIdTrib: receptor.numRegIdTrib } : {}),
  };
}

/** The first allowed of `preferred` for this customer; when none is (bad data), the first: validation says why. */
function dependentUsoCfdi(preferred: readonly string[], receptor: ReceptorInput): string {
  const kind = rfcKind(receptor.rfc);
  const allowed =
    kind === 'fisica' || kind === 'moral' ? usoCfdiFor(preferred, receptor.regimenFiscal, kind) : undefined;
  return allowed ?? preferred[0]!;
}

/**
 * InformacionGlobal's Meses for the sale's local date: its month (01–12), or for Periodicidad 05
 * (bimestral) its bimester (13 = enero–febrero … 18 = noviembre–diciembre), as c_Meses has them.
 */
export function mesesFor(periodicidad: string, localFecha: string): string {
  const month = Number(localFecha.slice(5, 7));
  return periodicidad === '05' ? String(12 + Math.ceil(month / 2)) : localFecha.slice(5, 7);
}
