import { z } from 'zod';
import { codePointLength, hasNonXmlChar, isBlank, normalizeSpace } from './text.ts';

/**
 * The shape of an invoice request (what a caller hands to `freezeComprobante`). Field names follow
 * Anexo 20 in lower camel case so they can be matched against the SAT's documentation. Amounts are
 * decimal strings, never JS numbers: money is never a float anywhere in Timbra.
 *
 * This schema checks shapes; `validateInvoiceRequest` adds the SAT rules that tie fields together.
 */

/**
 * Free text as the SAT allows it: no `|` (it separates fields of the cadena original), only
 * characters XML 1.0 can carry, and 1..max characters once whitespace is collapsed (XSD facets apply
 * after `whiteSpace="collapse"`).
 */
export function satText(max: number) {
  return z.string().superRefine((value, ctx) => {
    if (value.includes('|')) ctx.addIssue({ code: 'custom', message: "must not contain '|'" });
    if (hasNonXmlChar(value)) ctx.addIssue({ code: 'custom', message: 'contains a character XML cannot carry' });
    const length = codePointLength(normalizeSpace(value));
    if (length < 1 || length > max) {
      ctx.addIssue({ code: 'custom', message: `must have 1 to ${max} characters (whitespace collapsed)` });
    } else if (isBlank(value)) {
      ctx.addIssue({ code: 'custom', message: 'has no visible character (only spaces or invisible ones)' });
    }
  });
}

/** A non-negative decimal string with at most `maxDecimals` decimals and 18 integer digits. */
export function decimalString(maxDecimals: number) {
  const re = new RegExp(`^[0-9]{1,18}(\\.[0-9]{1,${maxDecimals}})?$`);
  return z.string().regex(re, `must be a non-negative decimal string with at most ${maxDecimals} decimals`);
}

const code = (re: RegExp, what: string) => z.string().regex(re, `must be ${what}`);

const rfc = z.string().min(1).max(13);
const codigoPostal = code(/^[0-9]{5}$/, 'a 5-digit código postal');
const uuid = code(/^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}$/, 'a UUID');
const tasa = code(/^[0-9]\.[0-9]{6}$/, 'a rate with 6 decimals, e.g. 0.160000');

const trasladoSchema = z.object({
  impuesto: z.string(),
  tipoFactor: z.string(),
  tasaOCuota: tasa.optional(),
});

const trasladoDRSchema = trasladoSchema.extend({
  documento: z.object({ base: decimalString(6), importe: decimalString(6), total: decimalString(6) }).optional(),
});

const retencionDRSchema = z.object({
  impuesto: z.string(),
  tipoFactor: z.string(),
  tasaOCuota: tasa,
  documento: z.object({ base: decimalString(6), importe: decimalString(6), total: decimalString(6) }).optional(),
});

const retencionSchema = z.object({
  impuesto: z.string(),
  tipoFactor: z.string(),
  tasaOCuota: tasa,
});

const conceptoSchema = z.object({
  claveProdServ: code(/^[0-9]{8}$/, 'an 8-digit ClaveProdServ'),
  noIdentificacion: satText(100).optional(),
  cantidad: decimalString(6),
  claveUnidad: code(/^[A-Z0-9]{1,3}$/, 'a ClaveUnidad (1–3 uppercase letters or digits)'),
  unidad: satText(20).optional(),
  descripcion: satText(1000),
  valorUnitario: decimalString(6),
  descuento: decimalString(6).optional(),
  objetoImp: z.string(),
  traslados: z.array(trasladoSchema).max(10).default([]),
  retenciones: z.array(retencionSchema).max(10).default([]),
});

const doctoRelacionadoSchema = z.object({
  idDocumento: uuid,
  serie: satText(25).optional(),
  folio: satText(40).optional(),
  monedaDR: z.string(),
  equivalenciaDR: decimalString(10).optional(),
  numParcialidad: z.number().int().min(1).max(999),
  impSaldoAnt: decimalString(6),
  impPagado: decimalString(6),
  objetoImpDR: z.string(),
  /**
   * IVA/IEPS traslados of the related invoice. BaseDR and ImporteDR are computed from ImpPagado; with
   * `documento` — the tax's Base and Importe on the related invoice, and that invoice's Total — they
   * are the document's tax in proportion to what has been paid so far (rounded) less what the earlier
   * Pagos reported, so the Pagos of a document add up to its taxes exactly.
   */
  trasladosDR: z.array(trasladoDRSchema).max(10).default([]),
  /** Retenciones of the related invoice (ISR, IVA the receptor withholds), shared out the same way. */
  retencionesDR: z.array(retencionDRSchema).max(10).default([]),
  /**
   * The earlier Pagos of the document, in order (not written to the XML): given to the one that
   * settles it, whose BaseDR is then the document's Base less what the earlier ones reported, so the
   * bases add up as the importes do.
   */
  pagosAnteriores: z
    .array(z.object({ impSaldoAnt: decimalString(6), impPagado: decimalString(6) }))
    .max(999)
    .optional(),
});

const pagoSchema = z.object({
  fechaPago: z.iso.datetime({ offset: true }),
  formaDePagoP: z.string(),
  monedaP: z.string(),
  tipoCambioP: decimalString(6).optional(),
  monto: decimalString(6),
  numOperacion: satText(100).optional(),
  doctosRelacionados: z.array(doctoRelacionadoSchema).min(1).max(100),
});

export const invoiceRequestSchema = z.object({
  /** TipoDeComprobante: I (Ingreso), E (Egreso) or P (Pago). */
  tipoDeComprobante: z.enum(['I', 'E', 'P']),
  /**
   * Id of the business event this document comes from (a payment, a refund, a payment received
   * against a PPD invoice). Feeds the stamp key; never appears in the XML.
   */
  sourceId: z.string().min(1).max(255),
  /**
   * When the document is issued — its Fecha: ISO 8601 with an offset (`Z` or `±hh:mm`). The time of
   * freezing, not of the business event (a payment's own time goes on the payment, and in a Pago's
   * FechaPago); a PAC refuses a Fecha older than 72 hours or in the future.
   */
  issuedAt: z.iso.datetime({ offset: true }),
  serie: satText(25).optional(),
  folio: satText(40).optional(),
  lugarExpedicion: codigoPostal,
  /** IANA zone for Fecha; defaults to the zone of LugarExpedicion. */
  timeZone: z.string().optional(),
  moneda: z.string().default('MXN'),
  tipoCambio: decimalString(6).optional(),
  formaPago: z.string().optional(),
  metodoPago: z.string().optional(),
  condicionesDePago: satText(1000).optional(),
  exportacion: z.string().default('01'),
  emisor: z.object({
    rfc,
    nombre: satText(300),
    regimenFiscal: z.string(),
  }),
  receptor: z.object({
    rfc,
    nombre: satText(300),
    domicilioFiscalReceptor: codigoPostal,
    residenciaFiscal: code(/^[A-Z]{3}$/, 'a 3-letter country code').optional(),
    numRegIdTrib: satText(40).optional(),
    regimenFiscalReceptor: z.string(),
    usoCFDI: z.string(),
  }),
  informacionGlobal: z
    .object({
      periodicidad: z.string(),
      meses: z.string(),
      año: z.number().int().min(2021).max(2099),
    })
    .optional(),
  cfdiRelacionados: z
    .array(z.object({ tipoRelacion: z.string(), uuids: z.array(uuid).min(1).max(100) }))
    .max(10)
    .optional(),
  conceptos: z.array(conceptoSchema).max(1000).optional(),
  pago: pagoSchema.optional(),
});

/** An invoice request as a caller writes it (defaults may be omitted). */
export type InvoiceRequestInput = z.input<typeof invoiceRequestSchema>;
/** An invoice request after shape validation, with defaults applied. */
export type InvoiceRequest = z.output<typeof invoiceRequestSchema>;
export type ConceptoRequest = z.output<typeof conceptoSchema>;
export type TrasladoRequest = z.output<typeof trasladoSchema>;
export type RetencionRequest = z.output<typeof retencionSchema>;
export type PagoRequest = z.output<typeof pagoSchema>;
export type DoctoRelacionadoRequest = z.output<typeof doctoRelacionadoSchema>;
