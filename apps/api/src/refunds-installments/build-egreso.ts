import { BigNumber } from 'bignumber.js';
import {
  amountDecimals,
  conceptosForSale,
  splitInProportion,
  taxProfileKey,
  totalsOf,
  withRelatedUuid,
  type InvoiceRequestInput,
  type SaleLine,
  type ValidationIssue,
  sourceIdIn,
} from '@timbra/cfdi-core';
import { receptorFor, type InvoiceSettings, type ReceptorInput } from '../payments/build-ingreso.ts';

/** What a refund's Egreso is built from: the refunded payment, as stored. */
export interface RefundedPayment {
  currency: string;
  /** Unknown for payments recorded before it was kept: the Egreso then needs data. */
  formaPago: string | undefined;
  receptor: ReceptorInput | null;
  /** The lines the payment was sold with (linesOf) and their prices with tax, in order. */
  lines: readonly SaleLine[];
  grosses: readonly string[];
  /** What refunds that named lines gave back of each line before this one. */
  refundedByLine?: readonly string[];
  tipoCambio?: string | null;
}

/** The part of one of the payment's lines a refund gives back (line: its index, from 0). */
export interface RefundedLine {
  line: number;
  amount: string;
}

export interface RefundFacts {
  provider: string;
  externalId: string;
  /** Refunded, taxes included, as a decimal string. */
  amount: string;
  occurredAt: Date;
  /** How the money went back (c_FormaPago); default the payment's own, unless that was 99 (PPD). */
  formaPago?: string;
  /** The lines it is for; absent: spread over the payment's lines in proportion to their prices. */
  lines?: readonly RefundedLine[];
  /** A payment in another currency: the TipoCambio the caller gives (REST), checked against the refund's day's. */
  tipoCambio?: string;
  /**
   * A REST call (its caller can fix it): no rate for the refund's day, or one outside c_Moneda's
   * variation, is refused. A provider's refund is recorded whatever: the sale's rate stands in.
   */
  strictRate?: boolean;
}

/**
 * The Egreso request (nota de crédito) for a refund: the SAT's concepto for devoluciones (ClaveProdServ
 * 84111506, ClaveUnidad ACT, "Devolución") once per tax profile of what is given back — the refunded
 * lines' own taxes (a refund of the 0% line is at 0%), or for a refund that names no line, the
 * payment's lines' in proportion to their prices — its bases solved as for the Ingreso so that the
 * Total is the refunded amount; the payment's receptor with UsoCFDI G02 where c_UsoCFDI allows it for
 * the customer's régimen, else S01 (público en general: S01), and FormaPago. CfdiRelacionados
 * (TipoRelacion 01, the Ingreso's UUID) is added when it is frozen, once the Ingreso is stamped
 * (`withRelatedUuid`). Fecha is `issuedAt`, the time the refund is recorded; an Egreso that waits for
 * its Ingreso keeps it (the worker never uses now()).
 */
export function buildEgresoRequest(
  payment: RefundedPayment,
  refund: RefundFacts,
  serie: string,
  folio: number,
  settings: InvoiceSettings,
  issuedAt: Date,
): { request: InvoiceRequestInput; problems?: undefined } | { request?: undefined; problems: ValidationIssue[] } {
  const parts = refundParts(payment, refund);
  if ('problems' in parts) return { problems: parts.problems };
  const lines: SaleLine[] = parts.map(({ taxes, amount }) => ({
    claveProdServ: '84111506',
    // No NoIdentificacion: the refund's id (a provider's `re_…`) is not the customer's to read.
    cantidad: '1',
    claveUnidad: 'ACT',
    descripcion: 'Devolución',
    amount,
    taxIncluded: true,
    taxes,
  }));
  const plan = conceptosForSale(lines, payment.currency, refund.amount);
  if (!plan.ok) return { problems: plan.issues };
  const formaPago = formaPagoOf(payment, refund);
  return {
    request: {
      tipoDeComprobante: 'E',
      // The refund, not our row id: every freeze of this Egreso derives the same stamp key.
      sourceId: sourceIdIn(settings.emisor, `${refund.provider}:refund:${refund.externalId}`),
      issuedAt: issuedAt.toISOString(),
      serie,
      folio: String(folio),
      lugarExpedicion: settings.emisor.lugarExpedicion,
      moneda: payment.currency,
      ...(payment.currency !== 'MXN' && payment.tipoCambio ? { tipoCambio: payment.tipoCambio } : {}),
      ...(formaPago ? { formaPago } : {}),
      metodoPago: 'PUE',
      emisor: {
        rfc: settings.emisor.rfc,
        nombre: settings.emisor.nombre,
        regimenFiscal: settings.emisor.regimenFiscal,
      },
      receptor: receptorFor(payment.receptor, settings, ['G02', 'S01']),
      conceptos: plan.conceptos,
    },
  };
}

/**
 * What a refund gives back, by tax profile (lines with the same taxes share a concepto): the named
 * lines' amounts, or the refund spread over every line in proportion to its price with tax (to the
 * cent, the remainders to the largest parts), so the Egreso's taxes mirror the Ingreso's.
 */
function refundParts(
  payment: RefundedPayment,
  refund: RefundFacts,
): { taxes: SaleLine['taxes']; amount: string }[] | { problems: ValidationIssue[] } {
  const decimals = amountDecimals(payment.currency) ?? 2;
  const byProfile = new Map<string, { taxes: SaleLine['taxes']; amount: BigNumber }>();
  const add = (taxes: SaleLine['taxes'], amount: BigNumber) => {
    const key = taxProfileKey(taxes);
    const entry = byProfile.get(key) ?? { taxes, amount: new BigNumber(0) };
    entry.amount = entry.amount.plus(amount);
    byProfile.set(key, entry);
  };
  if (refund.lines && refund.lines.length > 0) {
    const problems: ValidationIssue[] = [];
    const used = new Map<number, BigNumber>();
    const left = (line: number) =>
      new BigNumber(payment.grosses[line]!).minus(payment.refundedByLine?.[line] ?? 0).minus(used.get(line) ?? 0);
    let total = new BigNumber(0);
    refund.lines.forEach(({ line, amount }, i) => {
      const sold = payment.lines[line];
      if (!sold)
        problems.push({ path: `lines.${i}.line`, message: `the payment has ${payment.lines.length} line(s), from 0` });
      else if (new BigNumber(amount).isGreaterThan(left(line)))
        problems.push({
          path: `lines.${i}.amount`,
          message: `line ${line} was sold for ${payment.grosses[line]} and ${left(line).toFixed(decimals)} of it is left to refund`,
        });
      else {
        add(sold.taxes, new BigNumber(amount));
        used.set(line, (used.get(line) ?? new BigNumber(0)).plus(amount));
      }
      total = total.plus(amount);
    });
    if (problems.length === 0 && !total.isEqualTo(refund.amount))
      problems.push({
        path: 'lines',
        message: `the lines add up to ${total.toFixed()}, the refund is ${refund.amount}`,
      });
    if (problems.length > 0) return { problems };
  } else {
    const shares = splitInProportion(payment.grosses, refund.amount, decimals).map((x) => new BigNumber(x));
    payment.lines.forEach((line, i) => {
      if (shares[i]!.isGreaterThan(0)) add(line.taxes, shares[i]!);
    });
  }
  return [...byProfile.values()].map(({ taxes, amount }) => ({ taxes, amount: amount.toFixed(decimals) }));
}

/**
 * The Egreso's FormaPago: the refund's, else the payment's — but never 99 (a sale in installments
 * says 99 on its Ingreso): without one the Egreso is `needs_data`, and the refund must say it.
 */
function formaPagoOf(payment: RefundedPayment, refund: RefundFacts): string | undefined {
  const formaPago = refund.formaPago ?? payment.formaPago;
  return formaPago && formaPago !== '99' ? formaPago : undefined;
}

/** SubTotal and Total of an Egreso before it is frozen (what a waiting invoice shows). */
export function egresoTotals(request: InvoiceRequestInput): { subTotal: string; total: string } {
  // Its relation is set once the Ingreso is stamped; the amounts do not depend on it.
  const { subTotal, total } = totalsOf(withRelatedUuid(request, '00000000-0000-0000-0000-000000000000'));
  return { subTotal, total };
}
