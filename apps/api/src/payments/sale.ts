/**
 * A sale as merchants describe it — lines naming products or written inline, a customer by id or by
 * the provider's customer id, a currency and its TipoCambio — resolved into the facts a payment is
 * recorded with: lines with SAT keys and tax rates (cfdi-core SaleLine), the receptor's data copied
 * from the customer, and a TipoCambio with its source. The one place these rules live: REST bodies,
 * Stripe and Mercado Pago all come through here.
 */
import { Rfc } from '@nodecfdi/rfc';
import { z } from 'zod';
import {
  catalogs,
  conceptosForSale,
  rfcKind,
  tasaOCuotaAllowed,
  usoCfdiAllowed,
  type LineTaxes,
  type OperatorCatalogs,
  type SaleLine,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import { isStorableText, type Db } from '@timbra/db';
import { findCustomer, productsNamed, type CustomerRef, type ProductRow } from '@timbra/db/catalog';
import { DomainError } from '../domain-errors.ts';
import type { InvoiceSettings, PaymentFacts, ReceptorInput } from './build-ingreso.ts';
import { saleDay, tipoCambioOn, type ExchangeRateSource } from './exchange-rates.ts';

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

/** How a sale names its customer (our id, or a provider's customer id). */
export type { CustomerRef };

/**
 * The lines of a sale with every product looked up and every default applied: SaleLines as cfdi-core
 * computes them. A line without a product takes the deployment's concepto (CONCEPTO_*) for what it
 * leaves out. Problems name the line (`conceptos.N.field`).
 */
export async function resolveLines(
  db: Db,
  lines: readonly LineInput[],
  settings: InvoiceSettings,
  /**
   * The lines are a provider's items: an item id may or may not be one of our products' references —
   * when it is, the product's description wins over the item's title; when not, the item is inline.
   */
  options: { providerItems?: boolean } = {},
): Promise<{ lines: SaleLine[]; problems: ValidationIssue[] }> {
  const refs = [...new Set(lines.flatMap((l) => (l.product ? [l.product] : [])))];
  const found = await productsNamed(db, refs);
  const byRef = new Map<string, ProductRow>();
  for (const p of found) {
    byRef.set(p.reference, p);
    byRef.set(p.id, p);
  }
  const problems: ValidationIssue[] = [];
  const resolved: SaleLine[] = [];
  lines.forEach((raw, i) => {
    const parsed = lineSchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        problems.push({ path: ['conceptos', i, ...issue.path].map(String).join('.'), message: issue.message });
      return;
    }
    const line = parsed.data;
    const product = line.product ? byRef.get(line.product) : undefined;
    if (line.product && !product && options.providerItems) delete line.product;
    if (line.product && (!product || !product.active)) {
      problems.push({
        path: `conceptos.${i}.product`,
        message: product ? `product ${line.product} is not active` : `no product ${line.product} (id or reference)`,
      });
      return;
    }
    const taxes = line.taxes ?? (product ? taxesSchema.parse(product.taxes) : { iva: 'default' as const });
    const unitPrice = line.unitPrice ?? (line.amount === undefined ? product?.unitPrice?.toFixed() : undefined);
    if (unitPrice === undefined && line.amount === undefined) {
      problems.push({ path: `conceptos.${i}.amount`, message: 'give amount or unitPrice (the product has no price)' });
      return;
    }
    const descripcion =
      (options.providerItems ? product?.descripcion : undefined) ?? line.descripcion ?? product?.descripcion;
    if (!descripcion) {
      problems.push({ path: `conceptos.${i}.descripcion`, message: 'required for a line without a product' });
      return;
    }
    const unidad = line.unidad ?? product?.unidad ?? undefined;
    const noIdentificacion = line.noIdentificacion ?? product?.reference;
    resolved.push({
      claveProdServ: line.claveProdServ ?? product?.claveProdServ ?? settings.concepto.claveProdServ,
      claveUnidad: line.claveUnidad ?? product?.claveUnidad ?? settings.concepto.claveUnidad,
      ...(unidad ? { unidad } : {}),
      ...(noIdentificacion ? { noIdentificacion } : {}),
      descripcion,
      cantidad: line.cantidad,
      ...(line.amount !== undefined ? { amount: line.amount } : { unitPrice: unitPrice! }),
      taxIncluded: line.taxIncluded ?? product?.priceIncludesTax ?? true,
      ...(line.descuento !== undefined ? { descuento: line.descuento } : {}),
      taxes: lineTaxes(taxes, settings.ivaTasa),
    });
  });
  return { lines: resolved, problems };
}

/** `DomainError validation_failed` for problems a REST caller can fix. */
export function refuse(problems: readonly ValidationIssue[]): never {
  throw new DomainError('validation_failed', undefined, problems);
}

/** What a sale says beyond its money: its lines, its customer, its TipoCambio. */
export interface SaleDraft {
  lines?: readonly LineInput[] | undefined;
  /** The lines came from a provider: item ids that are not our products' references are inline lines. */
  providerLines?: boolean;
  customer?: CustomerRef | undefined;
  /** A TipoCambio the sale came with: the merchant's (request, metadata) or the provider's settlement. */
  tipoCambio?: { rate: string; source: 'request' | 'stripe' } | undefined;
}

export interface SaleDeps {
  /** The data (a transaction, when the sale is recorded with it). */
  prisma: Db;
  settings: InvoiceSettings;
  /** Reference rates (Banxico's FIX); undefined: none configured. */
  rates?: ExchangeRateSource | undefined;
}

/**
 * The payment facts of a sale with its draft resolved (products looked up, the customer's data
 * copied, TipoCambio found and checked). `strict` (a REST call, whose caller can fix it): every
 * problem is refused with its code. `lenient` (a provider's webhook: the money arrived): problems go
 * on the facts and the Ingreso waits in needs_data with them — loud, never silent. Either way, an
 * unreachable rate source throws exchange_rate_source_down (REST 503; a webhook is redelivered).
 */
export async function prepareSale(
  deps: SaleDeps,
  facts: PaymentFacts,
  draft: SaleDraft,
  mode: 'strict' | 'lenient',
): Promise<PaymentFacts> {
  const problems: ValidationIssue[] = [];
  let prepared: PaymentFacts = { ...facts };

  if (draft.lines && draft.lines.length > 0) {
    const resolved = await saleLines(deps, facts, draft.lines, mode, draft.providerLines === true);
    problems.push(...resolved.problems);
    // Lines that resolved but do not add up are kept (the invoice needs data; a correction replaces them).
    if (resolved.lines.length === draft.lines.length) prepared.lines = resolved.lines;
  }

  if (draft.customer) {
    const customer = await findCustomer(deps.prisma, draft.customer);
    if (!customer && 'id' in draft.customer) {
      const problem = { path: 'customerId', message: `no customer ${draft.customer.id}` };
      if (mode === 'strict') throw new DomainError('customer_not_found', undefined, [problem]);
      problems.push(problem);
    }
    // A provider's customer Timbra does not know is no problem: the sale goes to público en general.
    if (customer) {
      prepared.customerId = customer.id;
      if (!prepared.receptor) prepared.receptor = receptorOfCustomer(customer);
      if (!prepared.email && customer.email) prepared.email = customer.email;
    }
  }

  if (facts.currency !== 'MXN') {
    const found = await tipoCambioOn(deps.rates, facts.currency, saleDay(facts.occurredAt), draft.tipoCambio);
    if ('problem' in found) {
      if (mode === 'strict') throw new DomainError(found.code, undefined, [found.problem]);
      problems.push(found.problem);
    } else prepared = { ...prepared, tipoCambio: found };
  }
  return problems.length > 0 ? { ...prepared, problems: [...(prepared.problems ?? []), ...problems] } : prepared;
}

/**
 * A sale's lines resolved (products, defaults) and checked to add up to what was paid: in `strict`
 * mode refused with product_not_found, lines_total_mismatch or validation_failed; in `lenient` mode
 * returned as problems.
 */
export async function saleLines(
  deps: Pick<SaleDeps, 'prisma' | 'settings'>,
  sale: { amount: string; currency: string },
  lines: readonly LineInput[],
  mode: 'strict' | 'lenient',
  providerItems = false,
): Promise<{ lines: SaleLine[]; problems: ValidationIssue[] }> {
  const resolved = await resolveLines(deps.prisma, lines, deps.settings, { providerItems });
  if (resolved.problems.length > 0) {
    if (mode === 'lenient') return resolved;
    const missing = resolved.problems.some((p) => p.path.endsWith('.product'));
    throw new DomainError(missing ? 'product_not_found' : 'validation_failed', undefined, resolved.problems);
  }
  const plan = conceptosForSale(resolved.lines, sale.currency, sale.amount);
  if (plan.ok) return resolved;
  if (mode === 'lenient') return { lines: resolved.lines, problems: plan.issues };
  throw plan.mismatch
    ? new DomainError('lines_total_mismatch', undefined, [
        { path: 'conceptos', ...plan.mismatch, message: plan.issues[0]!.message },
      ])
    : new DomainError('validation_failed', undefined, plan.issues);
}
