/**
 * A sale as merchants describe it — lines naming products or written inline, a customer by id or by
 * the provider's customer id, a currency and its TipoCambio — resolved into the facts a payment is
 * recorded with: lines with SAT keys and tax rates (cfdi-core SaleLine), the receptor's data copied
 * from the customer, and a TipoCambio with its source. The one place these rules live: REST bodies,
 * Stripe and Mercado Pago all come through here.
 */
import { conceptosForSale, type SaleLine, type ValidationIssue } from '@timbra/cfdi-core';
import type { Db } from '@timbra/db';
import { findCustomer, productsNamed, type CustomerRef, type ProductRow } from '@timbra/db/catalog';
import { DomainError } from '../domain-errors.ts';
import type { InvoiceSettings, PaymentFacts } from './build-ingreso.ts';
import { saleDay, tipoCambioOn, type ExchangeRateSource } from './exchange-rates.ts';
import { lineSchema, lineTaxes, receptorOfCustomer, taxesSchema, type LineInput } from '../catalog/catalog-schemas.ts';

export type { LineInput };

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
