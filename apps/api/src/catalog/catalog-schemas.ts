/**
 * What merchants write about what they sell and to whom: products, a sale's lines (a product named,
 * or written inline), their taxes, and customers — the request schemas and the checks beyond them
 * (the SAT's catalogues, RFC check digits, the receptor's régimen and UsoCFDI). The product and
 * customer routes store them; payments/sale.ts resolves a sale's lines and customer through them.
 */
import { Rfc } from '@nodecfdi/rfc';
import { z } from 'zod';
import {
  catalogs,
  rfcKind,
  tasaOCuotaAllowed,
  usoCfdiAllowed,
  type LineTaxes,
  type OperatorCatalogs,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import { isStorableText } from '@timbra/db';
import type { ReceptorInput } from '../payments/build-ingreso.ts';
import { metadataSchema } from '../http/schemas.ts';

/** A percentage as merchants write it: "16", "10.6667", "26.5". */
const percent = z.string().regex(/^\d{1,3}(\.\d{1,4})?$/, 'a percentage like "16" or "10.6667"');

/**
 * A line's (or a product's) taxes as the API takes them. `iva`: "16", "8" (frontera), "0", "exento",
 * "none" (not objeto de impuesto) or "default" (the emisor's IVA_TASA); `ieps` a c_TasaOCuota IEPS
 * Tasa in percent; `retenciones` what a receptor that withholds keeps (ISR, IVA) in percent.
 */
export const taxesSchema = z
  .object({
    iva: z.enum(['16', '8', '0', 'exento', 'none', 'default']).default('default'),
    ieps: percent.optional(),
    retenciones: z.object({ isr: percent.optional(), iva: percent.optional() }).strict().optional(),
  })
  .strict()
  .superRefine((t, ctx) => {
    const check = (
      path: (string | number)[],
      impuesto: string,
      value: string | undefined,
      kind: 'traslado' | 'retencion',
    ) => {
      if (value !== undefined && !tasaOCuotaAllowed(impuesto, 'Tasa', rateOf(value), kind))
        ctx.addIssue({
          code: 'custom',
          path,
          message: `${value}% is not a ${kind} rate c_TasaOCuota allows for this tax`,
        });
    };
    check(['ieps'], '003', t.ieps, 'traslado');
    check(['retenciones', 'isr'], '001', t.retenciones?.isr, 'retencion');
    check(['retenciones', 'iva'], '002', t.retenciones?.iva, 'retencion');
    if (t.iva === 'none' && (t.ieps !== undefined || t.retenciones))
      ctx.addIssue({ code: 'custom', path: ['iva'], message: '"none" (not objeto de impuesto) carries no other tax' });
  });
export type TaxesInput = z.output<typeof taxesSchema>;

/** A percentage as a c_TasaOCuota rate ("10.6667" → "0.106667"). */
function rateOf(value: string): string {
  const [int, frac = ''] = value.split('.');
  const scaled = `${int}${frac.padEnd(4, '0')}`; // percent × 10^4 = rate × 10^6
  const digits = scaled.replace(/^0+(?=\d)/, '').padStart(7, '0');
  return `${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

/** The taxes as cfdi-core computes them, `default` IVA being the emisor's rate. */
export function lineTaxes(t: TaxesInput, ivaTasa: string): LineTaxes {
  const iva =
    t.iva === 'default' ? ivaTasa : t.iva === 'exento' ? 'exento' : t.iva === 'none' ? undefined : rateOf(t.iva);
  return {
    ...(iva !== undefined ? { iva } : {}),
    ...(t.ieps !== undefined ? { ieps: rateOf(t.ieps) } : {}),
    ...(t.retenciones?.isr !== undefined ? { retencionIsr: rateOf(t.retenciones.isr) } : {}),
    ...(t.retenciones?.iva !== undefined ? { retencionIva: rateOf(t.retenciones.iva) } : {}),
  };
}

const decimal = (max: number) =>
  z.string().regex(new RegExp(`^\\d{1,18}(\\.\\d{1,${max}})?$`), `a decimal with at most ${max} decimals`);
const satText = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((v) => !v.includes('|') && isStorableText(v), "no '|', NUL or lone surrogate");
const claveProdServ = z.string().regex(/^\d{8}$/, 'an 8-digit c_ClaveProdServ');

/**
 * Why a product's ClaveProdServ cannot be stored: not in the operator's c_ClaveProdServ
 * (SAT_CLAVE_PROD_SERV_FILE), when one is supplied. A sale's own keys are checked with its document
 * by the SAT rules (CFDI40162), which are given the same catalogue.
 */
export function claveProdServProblem(key: string | undefined, supplied: OperatorCatalogs | undefined) {
  const keys = supplied?.clavesProdServ;
  return key !== undefined && keys && !keys.has(key)
    ? { path: 'claveProdServ', message: `${key} is not in c_ClaveProdServ (SAT_CLAVE_PROD_SERV_FILE)` }
    : undefined;
}
const claveUnidad = z
  .string()
  .refine((key) => catalogs.C_CLAVE_UNIDAD.has(key), 'a c_ClaveUnidad key (e.g. H87 pieza, E48 servicio, KGM)');

/** A product as created (POST /v1/products); PATCH takes any part of it but `reference`. */
export const productSchema = z
  .object({
    reference: z.string().regex(/^[\x21-\x7e]{1,100}$/, '1–100 printable ASCII characters'),
    descripcion: satText(1000),
    claveProdServ,
    claveUnidad,
    unidad: satText(20).optional(),
    taxes: taxesSchema.default({ iva: 'default' }),
    unitPrice: decimal(6).optional(),
    priceIncludesTax: z.boolean().default(true),
    active: z.boolean().default(true),
  })
  .strict();
export const productPatchSchema = productSchema
  .omit({ reference: true })
  .partial()
  .extend({ unitPrice: decimal(6).nullable().optional(), unidad: satText(20).nullable().optional() })
  .strict();

/** A line of a sale: a product (id or reference) and what this sale says of it, or a line written in full. */
export const lineSchema = z
  .object({
    product: z.string().min(1).max(100).optional(),
    claveProdServ: claveProdServ.optional(),
    claveUnidad: claveUnidad.optional(),
    unidad: satText(20).optional(),
    noIdentificacion: satText(100).optional(),
    descripcion: satText(1000).optional(),
    cantidad: decimal(6).default('1'),
    unitPrice: decimal(6).optional(),
    amount: decimal(6).optional(),
    taxIncluded: z.boolean().optional(),
    descuento: decimal(6).optional(),
    taxes: taxesSchema.optional(),
  })
  .strict();
export type LineInput = z.input<typeof lineSchema>;

/** A customer as created (POST /v1/customers); PATCH takes any part of it. */
export const customerSchema = z
  .object({
    rfc: z.string().trim().toUpperCase(),
    nombre: satText(300),
    codigoPostal: z.string().regex(/^\d{5}$/, 'a 5-digit código postal'),
    regimenFiscal: z.string().regex(/^\d{3}$/, 'a c_RegimenFiscal code'),
    usoCfdi: z.string().regex(/^[A-Z]{1,2}\d{2}$/, 'a c_UsoCFDI code'),
    email: z.email().max(254).optional(),
    stripeCustomerId: z
      .string()
      .regex(/^cus_[A-Za-z0-9]{1,250}$/, 'a Stripe customer id (cus_…)')
      .optional(),
    mercadoPagoPayerId: z
      .string()
      .regex(/^\d{1,20}$/, 'a Mercado Pago payer id')
      .optional(),
    /** Some RFCs the SAT issued do not match their own check digit: set to accept one anyway. */
    acceptCheckDigitMismatch: z.boolean().optional(),
    /** The merchant's own strings; never in a CFDI. */
    metadata: metadataSchema.optional(),
  })
  .strict();
export type CustomerInput = z.output<typeof customerSchema>;

/**
 * What is wrong with an RFC's check digit (`@nodecfdi/rfc`), for a persona física or moral: a typo
 * there takes a folio and dies at the PAC (CFDI40143). Some RFCs the SAT issued do not match their
 * own digit: `accept` lets one through. Undefined for a generic RFC or one that is not an RFC (other
 * checks say so).
 */
export function rfcCheckDigitProblem(rfc: string, accept = false): string | undefined {
  const parsed = Rfc.parseOrNull(rfc);
  const kind = rfcKind(rfc);
  if (!parsed || (kind !== 'fisica' && kind !== 'moral') || accept || parsed.doesCheckSumMatch()) return undefined;
  return `the check digit should be ${parsed.calculateChecksum()}: a typo? (if the SAT issued it so, send acceptCheckDigitMismatch: true)`;
}

/**
 * What is wrong with a customer's fiscal data: the RFC (shape and check digit, with `@nodecfdi/rfc`;
 * the generic RFCs are not customers), the régimen for that kind of persona, and the UsoCFDI for the
 * régimen (c_UsoCFDI). Empty: a receptor a PAC will accept (name and CP are checked by the PAC
 * against the SAT's list).
 */
export function customerProblems(
  c: Omit<CustomerInput, 'email' | 'stripeCustomerId' | 'mercadoPagoPayerId'>,
): ValidationIssue[] {
  const problems: ValidationIssue[] = [];
  const rfc = Rfc.parseOrNull(c.rfc);
  const kind = rfcKind(c.rfc);
  if (!rfc || kind === null)
    problems.push({ path: 'rfc', message: 'not an RFC (12 characters for a moral, 13 for a física)' });
  else if (kind === 'generico')
    problems.push({
      path: 'rfc',
      message: 'XAXX010101000 / XEXX010101000 are for sales without a customer: leave the customer out',
    });
  else {
    const checkDigit = rfcCheckDigitProblem(c.rfc, c.acceptCheckDigitMismatch);
    if (checkDigit) problems.push({ path: 'rfc', message: checkDigit });
  }
  const regimen = Object.hasOwn(catalogs.REGIMEN_FISCAL, c.regimenFiscal)
    ? catalogs.REGIMEN_FISCAL[c.regimenFiscal]
    : undefined;
  if (!regimen) problems.push({ path: 'regimenFiscal', message: `${c.regimenFiscal} is not in c_RegimenFiscal` });
  else if ((kind === 'fisica' || kind === 'moral') && !regimen.applies.includes(kind))
    problems.push({
      path: 'regimenFiscal',
      message: `${c.regimenFiscal} (${regimen.name}) is not for a persona ${kind}`,
    });
  if (!Object.hasOwn(catalogs.USO_CFDI, c.usoCfdi))
    problems.push({ path: 'usoCfdi', message: `${c.usoCfdi} is not in c_UsoCFDI` });
  else if (regimen && (kind === 'fisica' || kind === 'moral') && !usoCfdiAllowed(c.usoCfdi, c.regimenFiscal, kind))
    problems.push({
      path: 'usoCfdi',
      message: `c_UsoCFDI does not allow ${c.usoCfdi} for a persona ${kind} in régimen ${c.regimenFiscal}`,
    });
  return problems;
}

/** The receptor data a payment copies from a customer. */
export function receptorOfCustomer(c: {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  codigoPostal: string;
  usoCfdi: string;
}): ReceptorInput {
  return {
    rfc: c.rfc,
    nombre: c.nombre,
    regimenFiscal: c.regimenFiscal,
    codigoPostal: c.codigoPostal,
    usoCfdi: c.usoCfdi,
  };
}
