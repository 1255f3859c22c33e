/**
 * The lines of a sale as a merchant knows them — a product, a quantity, a price with or without tax,
 * its taxes — turned into the conceptos of a CFDI whose Total is exactly the money received.
 *
 * A price before tax is what the concepto says (ValorUnitario, Descuento) and the taxes are computed
 * on top. A price with tax included (a shop's shelf price, what Stripe and Mercado Pago report) is
 * the line's gross: its base is solved for, so that the concepto's Importe plus its traslados less
 * its retenciones is that gross to the cent. At most one line is written with six decimals (Anexo 20
 * allows them on a concepto) and carries the cents that no two-decimal base could; with one such
 * line the comprobante's rounded totals are still exact (the others add exactly), so Total = the
 * amount paid.
 */
import type { ConceptoRequest, InvoiceRequest } from '../validate/request-schema.ts';
import type { ValidationIssue } from '../errors.ts';
import { computeAmounts, computeConcepto, currencyDecimals } from './compute-totals.ts';
import { Dec, fixed, sum } from './money.ts';
import {
  carryTheCents,
  coarseBase,
  conceptoGross,
  conceptoOf,
  fineBasesForAll,
  valorUnitarioBeforeTax,
} from './sale-bases.ts';

/** A line's taxes: rates as c_TasaOCuota writes them (six decimals). */
export interface LineTaxes {
  /** IVA traslado: '0.160000', '0.080000' (frontera), '0.000000', or 'exento'; absent: no IVA. */
  iva?: string;
  /** IEPS traslado at one of its c_TasaOCuota Tasa rates. */
  ieps?: string;
  /** ISR the receptor withholds (retención), e.g. '0.100000' or '0.012500'. */
  retencionIsr?: string;
  /** IVA the receptor withholds, e.g. '0.106667' (two thirds of 16%). */
  retencionIva?: string;
}

export interface SaleLine {
  claveProdServ: string;
  claveUnidad: string;
  unidad?: string;
  noIdentificacion?: string;
  descripcion: string;
  /** Decimal, up to 6 decimals. */
  cantidad: string;
  /** Price of one unit. Exactly one of `unitPrice` and `amount`. */
  unitPrice?: string;
  /** Price of the whole line (cantidad × unit price). */
  amount?: string;
  /** True: the prices include the line's taxes (the gross paid); false: they are before tax. */
  taxIncluded: boolean;
  /** Discount on the line, before tax (only with `taxIncluded: false`). */
  descuento?: string;
  taxes: LineTaxes;
}

/** The lines add up to something other than what was paid. */
export interface LinesMismatch {
  lines: string;
  paid: string;
  /** paid − lines. */
  difference: string;
}

export type SalePlan =
  | { ok: true; conceptos: ConceptoRequest[]; /** Each line's price with its taxes. */ grosses: string[] }
  | { ok: false; issues: ValidationIssue[]; mismatch?: LinesMismatch };

/**
 * The conceptos for a sale paid with `paid` (in `moneda`): every line's concepto, with bases solved
 * for the lines priced with tax included, so that the CFDI's Total is `paid`.
 *
 * Refused (`ok: false`): a line that is not well formed (its path and why), or lines whose gross adds
 * up to something else than what was paid (`mismatch`, with the difference).
 */
export function conceptosForSale(
  lines: readonly SaleLine[],
  moneda: string,
  paid: string,
  options: {
    /**
     * Each line's concepto carries its own gross (a factura global: one concepto per ticket, whose
     * amount is that ticket's). A line no base with the currency's decimals gives exactly is written
     * at its six-decimal base (99.00 at 16%: 85.344828 + 13.655172), instead of letting one line carry
     * the other lines' cents.
     */
    eachLineItsGross?: boolean;
  } = {},
): SalePlan {
  const decimals = currencyDecimals(moneda);
  const { nominal, issues } = grossesOf(lines, moneda, decimals);
  if (issues.length > 0) return { ok: false, issues };

  const linesTotal = sum(nominal);
  const paidDec = new Dec(paid);
  if (!linesTotal.isEqualTo(paidDec)) {
    return notPaid(linesTotal, paidDec, decimals, (lines) => `the lines add up to ${lines} ${moneda} with their taxes`);
  }

  // Each line with tax included at a base with the currency's decimals where one gives its gross
  // exactly, else the nearest. When the comprobante's rounded Total then differs from what was paid
  // (a cent here and there), one line — the largest with tax included — is solved at six decimals
  // for the Total, every other concepto as it is.
  const conceptos: ConceptoRequest[] = lines.map((line, i) =>
    line.taxIncluded ? coarseBase(line, nominal[i]!, decimals) : conceptoOf(line, valorUnitarioBeforeTax(line)!),
  );
  const totalOf = (cs: ConceptoRequest[]) => new Dec(computeAmounts({ moneda, conceptos: cs } as InvoiceRequest).total);
  if (options.eachLineItsGross) {
    const fine = fineBasesForAll(lines, nominal, conceptos, decimals, totalOf, paidDec, true);
    if (fine) return { ok: true, conceptos: fine, grosses: nominal.map((g) => fixed(g, decimals)) };
    return notPaid(
      totalOf(conceptos),
      paidDec,
      decimals,
      (l) => `with its totals rounded the CFDI comes to ${l} ${moneda}`,
    );
  }
  const total = totalOf(conceptos);
  if (total.isEqualTo(paidDec)) return { ok: true, conceptos, grosses: nominal.map((g) => fixed(g, decimals)) };
  const carried = carryTheCents(lines, nominal, conceptos, decimals, totalOf, paidDec);
  if (carried) return { ok: true, conceptos: carried, grosses: nominal.map((g) => fixed(g, decimals)) };
  // No line could carry the cents (two before-tax lines with six-decimal prices can round apart, and
  // such lines are as priced): the comprobante would not come to what was paid.
  return notPaid(total, paidDec, decimals, (lines) => `with its totals rounded the CFDI comes to ${lines} ${moneda}`);
}

/**
 * Each line's gross (what it costs with its taxes), or why a line is not well formed: a price with
 * tax included is its gross (at most the currency's decimals); one before tax is its concepto's.
 */
function grossesOf(
  lines: readonly SaleLine[],
  moneda: string,
  decimals: number,
): { nominal: Dec[]; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const nominal: Dec[] = [];
  lines.forEach((line, i) => {
    const path = `conceptos.${i}`;
    const bad = (field: string, message: string): void => {
      issues.push({ path: `${path}.${field}`, message });
    };
    const cantidad = new Dec(line.cantidad);
    if (!cantidad.isGreaterThan(0)) bad('cantidad', 'must be greater than 0');
    if ((line.unitPrice === undefined) === (line.amount === undefined))
      return bad('unitPrice', 'give exactly one of unitPrice and amount');
    if (line.taxIncluded && line.descuento !== undefined)
      return bad(
        'descuento',
        'only with prices before tax (taxIncluded: false); with tax included, give the discounted price',
      );
    if (line.taxIncluded) {
      const gross = line.amount !== undefined ? new Dec(line.amount) : cantidad.times(new Dec(line.unitPrice ?? 0));
      if (gross.decimalPlaces()! > decimals)
        return bad(
          line.amount !== undefined ? 'amount' : 'unitPrice',
          `the line's price with tax (${gross.toFixed()}) has more than ${decimals} decimals in ${moneda}`,
        );
      if (!gross.isGreaterThan(0)) return bad('amount', 'must be greater than 0');
      nominal[i] = gross;
      return;
    }
    const valorUnitario = valorUnitarioBeforeTax(line);
    if (valorUnitario === undefined)
      return bad('amount', 'amount ÷ cantidad must be a price with at most 6 decimals (give unitPrice instead)');
    const concepto = conceptoOf(line, valorUnitario);
    const computed = computeConcepto(concepto, decimals);
    if (new Dec(computed.descuento ?? 0).isGreaterThan(computed.importe))
      return bad('descuento', `more than the line's importe (${computed.importe})`);
    nominal[i] = conceptoGross(concepto, decimals);
  });
  return { nominal, issues };
}

/** The refusal of lines that come to `total` when `paid` was paid, with the difference. */
function notPaid(total: Dec, paid: Dec, decimals: number, said: (lines: string) => string): SalePlan {
  const mismatch = {
    lines: fixed(total, decimals),
    paid: fixed(paid, decimals),
    difference: fixed(paid.minus(total), decimals),
  };
  return {
    ok: false,
    mismatch,
    issues: [
      {
        path: 'conceptos',
        message: `${said(mismatch.lines)}, but ${mismatch.paid} was paid (difference ${mismatch.difference})`,
      },
    ],
  };
}
