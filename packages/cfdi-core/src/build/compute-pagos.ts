import type { DoctoRelacionadoRequest, PagoRequest } from '../validate/request-schema.ts';
import { currencyDecimals, type RetencionAmounts, type TrasladoAmounts } from './compute-totals.ts';
import { Dec, fixed, sum, ZERO } from './money.ts';
import { taxLimits, within } from '../rules/nodes.ts';

const withinLimits = (v: Dec, { min, max }: { min: Dec; max: Dec }) => within(v, min, max);

export interface DoctoRelacionadoAmounts {
  source: DoctoRelacionadoRequest;
  /**
   * The request's ObjetoImpDR, but 01 when it is 02 and none of the document's taxes has a part in
   * this payment (every share rounds to nothing: a one-cent installment of a large invoice, or a tiny
   * taxed line beside a large untaxed one): 02 without ImpuestosDR is refused (CRP20246).
   */
  objetoImpDR: string;
  equivalenciaDR: string;
  impSaldoAnt: string;
  impPagado: string;
  impSaldoInsoluto: string;
  trasladosDR: TrasladoAmounts[];
  retencionesDR: RetencionAmounts[];
}

export interface PagoAmounts {
  monto: string;
  tipoCambioP: string;
  doctos: DoctoRelacionadoAmounts[];
  /** ImpuestosP/TrasladosP: TrasladoDR grouped by impuesto, TipoFactor and tasa. */
  trasladosP: TrasladoAmounts[];
  /** ImpuestosP/RetencionesP: RetencionDR grouped by impuesto. */
  retencionesP: { impuesto: string; importe: string }[];
  /** Totales attributes in the order the SAT XSLT reads them; only those that apply. */
  totales: [string, string][];
}

/**
 * Amounts of a complemento de pago (Pagos 2.0) for one payment in the related documents' currency.
 *
 * The taxes of each related document are split in proportion to what this payment covers:
 * BaseDR = ImpPagado / (1 + Σ rates), ImporteDR = BaseDR × rate, rounded half up to the currency's
 * decimals (Pagos 2.0 Guía de llenado, "Impuestos del documento relacionado"). With the related
 * document's own figures (`trasladosDR[].documento`), each payment reports its share of them instead,
 * so a document's Pagos add up to its taxes exactly (`proportionalShare`).
 */
export function computePago(pago: PagoRequest): PagoAmounts {
  const decimals = currencyDecimals(pago.monedaP);
  const doctos = pago.doctosRelacionados.map((d) => computeDocto(d, decimals));

  const groups = new Map<string, { t: TrasladoAmounts; base: Dec; importe: Dec }>();
  for (const d of doctos) {
    for (const t of d.trasladosDR) {
      const key = `${t.impuesto}|${t.tipoFactor}|${t.tasaOCuota ?? ''}`;
      const g = groups.get(key) ?? { t, base: ZERO, importe: ZERO };
      g.base = g.base.plus(t.base);
      g.importe = g.importe.plus(t.importe ?? 0);
      groups.set(key, g);
    }
  }
  const trasladosP = [...groups.values()].map(({ t, base, importe }) =>
    t.tasaOCuota === undefined
      ? { base: fixed(base, decimals), impuesto: t.impuesto, tipoFactor: t.tipoFactor }
      : {
          base: fixed(base, decimals),
          impuesto: t.impuesto,
          tipoFactor: t.tipoFactor,
          tasaOCuota: t.tasaOCuota,
          importe: fixed(importe, decimals),
        },
  );

  const retencionGroups = new Map<string, Dec>();
  for (const d of doctos)
    for (const r of d.retencionesDR)
      retencionGroups.set(r.impuesto, (retencionGroups.get(r.impuesto) ?? ZERO).plus(r.importe));
  const retencionesP = [...retencionGroups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([impuesto, importe]) => ({ impuesto, importe: fixed(importe, decimals) }));

  const tipoCambioP = pago.tipoCambioP ?? '1';
  const inMxn = (value: Dec) => fixed(value.times(tipoCambioP), 2);
  const ivaGroup = (tasa: string) => trasladosP.find((t) => t.impuesto === '002' && t.tasaOCuota === tasa);
  const totales: [string, string][] = [];
  for (const [impuesto, name] of [
    ['002', 'TotalRetencionesIVA'],
    ['001', 'TotalRetencionesISR'],
    ['003', 'TotalRetencionesIEPS'],
  ] as const) {
    const r = retencionesP.find((x) => x.impuesto === impuesto);
    if (r) totales.push([name, inMxn(new Dec(r.importe))]);
  }
  for (const [tasa, suffix] of [
    ['0.160000', '16'],
    ['0.080000', '8'],
    ['0.000000', '0'],
  ] as const) {
    const g = ivaGroup(tasa);
    if (g) {
      totales.push([`TotalTrasladosBaseIVA${suffix}`, inMxn(new Dec(g.base))]);
      totales.push([`TotalTrasladosImpuestoIVA${suffix}`, inMxn(new Dec(g.importe ?? 0))]);
    }
  }
  const exento = trasladosP.filter((t) => t.impuesto === '002' && t.tipoFactor === 'Exento');
  if (exento.length > 0) totales.push(['TotalTrasladosBaseIVAExento', inMxn(sum(exento.map((t) => new Dec(t.base))))]);
  totales.push(['MontoTotalPagos', inMxn(new Dec(pago.monto))]);

  return {
    monto: fixed(new Dec(pago.monto), decimals),
    tipoCambioP,
    doctos,
    trasladosP,
    retencionesP,
    totales,
  };
}

function computeDocto(d: DoctoRelacionadoRequest, decimals: number): DoctoRelacionadoAmounts {
  const saldoAnt = new Dec(d.impSaldoAnt);
  const pagado = new Dec(d.impPagado);
  const rates = sum(d.trasladosDR.filter((t) => t.tasaOCuota !== undefined).map((t) => new Dec(t.tasaOCuota ?? 0)));
  const base = new Dec(fixed(pagado.dividedBy(rates.plus(1)), decimals));
  // A tax at a rate: this payment's share of the document's, or (without the document's figures)
  // computed on this payment's base.
  const rated = (t: {
    impuesto: string;
    tipoFactor: string;
    tasaOCuota: string;
    documento?: { base: string; importe: string; total: string } | undefined;
  }): RetencionAmounts => {
    const part = t.documento ? proportionalShare(t.documento, saldoAnt, pagado, t.tasaOCuota, decimals) : undefined;
    // `noShare` has left out the taxes whose part is 'none'.
    const share = part === 'none' ? undefined : part;
    const settling = share && t.documento && d.pagosAnteriores && saldoAnt.isEqualTo(pagado);
    if (settling) share.base = remainingBase(t.documento!, d.pagosAnteriores!, share, t.tasaOCuota, decimals);
    return {
      base: share?.base ?? fixed(base, decimals),
      impuesto: t.impuesto,
      tipoFactor: t.tipoFactor,
      tasaOCuota: t.tasaOCuota,
      importe: share?.importe ?? fixed(base.times(t.tasaOCuota), decimals),
    };
  };
  const trasladosDR: TrasladoAmounts[] =
    d.objetoImpDR === '02'
      ? d.trasladosDR
          .filter((t) => noShare(t, saldoAnt, pagado, decimals) === false)
          .map((t) => {
            if (t.tipoFactor === 'Exento' || t.tasaOCuota === undefined) {
              // Exento has a base and no importe: this payment's share of the document's base.
              const share = t.documento ? baseShare(t.documento, saldoAnt, pagado, decimals) : undefined;
              return { base: share ?? fixed(base, decimals), impuesto: t.impuesto, tipoFactor: t.tipoFactor };
            }
            return rated({ ...t, tasaOCuota: t.tasaOCuota });
          })
      : [];
  const retencionesDR: RetencionAmounts[] =
    d.objetoImpDR === '02'
      ? d.retencionesDR.filter((r) => noShare(r, saldoAnt, pagado, decimals) === false).map(rated)
      : [];
  const nothingToReport = d.objetoImpDR === '02' && trasladosDR.length + retencionesDR.length === 0;
  return {
    source: d,
    objetoImpDR: nothingToReport ? '01' : d.objetoImpDR,
    retencionesDR,
    // Same currency in payment and document: the SAT asks for EquivalenciaDR = 1.
    equivalenciaDR: d.equivalenciaDR ?? '1',
    impSaldoAnt: fixed(saldoAnt, decimals),
    impPagado: fixed(pagado, decimals),
    impSaldoInsoluto: fixed(saldoAnt.minus(pagado), decimals),
    trasladosDR,
  };
}

/**
 * This payment's part of a document's tax: what the document's Base and Importe are in proportion to
 * what has been paid after it, rounded, less the same before it — so the parts telescope and every
 * document's Pagos add up to its tax exactly, whatever the installments. ImporteDR is that part;
 * BaseDR is too when Anexo 20's limits (ImporteDR ≈ BaseDR × rate) allow it, else the same
 * proportion at six decimals, else ImporteDR / rate with six decimals (within the limits by
 * construction). `'none'` when the tax has no part in this payment: its importe part rounds to
 * nothing and so does its base part, or no base above zero fits an importe of zero (the payment
 * leaves it out; later ones report it). Undefined (the per-payment formula) when the document's
 * figures do not fit this payment.
 */
function proportionalShare(
  documento: { base: string; importe: string; total: string },
  saldoAnt: Dec,
  pagado: Dec,
  rate: string,
  decimals: number,
): { base: string; importe: string } | 'none' | undefined {
  const total = new Dec(documento.total);
  const before = total.minus(saldoAnt);
  if (!total.isGreaterThan(0) || before.isNegative()) return undefined;
  const after = before.plus(pagado);
  const part = (of: string, places: number) => {
    const cumulative = (paid: Dec) => new Dec(fixed(paid.times(of).dividedBy(total), places));
    return cumulative(after).minus(cumulative(before));
  };
  const importe = part(documento.importe, decimals);
  if (importe.isNegative()) return undefined;
  const importeText = fixed(importe, decimals);
  const fits = (base: Dec, places: number) =>
    base.isGreaterThan(0) && withinLimits(importe, taxLimits(fixed(base, places), rate, decimals));
  const base = part(documento.base, decimals);
  if (fits(base, decimals)) return { base: fixed(base, decimals), importe: importeText };
  // Nothing of either at the currency's decimals (a one-cent installment of a large invoice).
  if (importe.isZero() && !base.isGreaterThan(0)) return 'none';
  // The same proportion at six decimals (Anexo 20 allows them) still adds up over the Pagos.
  const base6 = part(documento.base, 6);
  if (fits(base6, 6)) return { base: fixed(base6, 6), importe: importeText };
  if (!new Dec(rate).isZero()) {
    const fine = importe.dividedBy(rate);
    if (fits(fine, 6)) return { base: fixed(fine, 6), importe: importeText };
  }
  return importe.isZero() ? 'none' : undefined;
}

/**
 * The base of the Pago that settles a document: the document's Base less the bases the earlier Pagos
 * reported (each recomputed as it was, `proportionalShare`), when that is within Anexo 20's limits for
 * this Pago's ImporteDR; else the share's own base. A share that fell back on ImporteDR / rate breaks
 * the telescoping of the bases; this closes it.
 */
function remainingBase(
  documento: { base: string; importe: string; total: string },
  earlier: readonly { impSaldoAnt: string; impPagado: string }[],
  share: { base: string; importe: string },
  rate: string,
  decimals: number,
): string {
  let reported = ZERO;
  for (const e of earlier) {
    const part = proportionalShare(documento, new Dec(e.impSaldoAnt), new Dec(e.impPagado), rate, decimals);
    if (!part) return share.base;
    if (part !== 'none') reported = reported.plus(part.base);
  }
  const rest = new Dec(documento.base).minus(reported);
  if (!rest.isGreaterThan(0) || rest.decimalPlaces()! > 6) return share.base;
  const text = fixed(rest, Math.max(decimals, rest.decimalPlaces()!));
  return withinLimits(new Dec(share.importe), taxLimits(text, rate, decimals)) ? text : share.base;
}

/** This payment's share of a document's (exento) base, telescoping like `proportionalShare`. */
function baseShare(
  documento: { base: string; total: string },
  saldoAnt: Dec,
  pagado: Dec,
  decimals: number,
): string | undefined {
  const total = new Dec(documento.total);
  const before = total.minus(saldoAnt);
  if (!total.isGreaterThan(0) || before.isNegative()) return undefined;
  const cumulative = (paid: Dec) => new Dec(fixed(paid.times(documento.base).dividedBy(total), decimals));
  const base = cumulative(before.plus(pagado)).minus(cumulative(before));
  return base.isGreaterThan(0) ? fixed(base, decimals) : undefined;
}

/**
 * True when a tax of the related document has no part in this payment (`proportionalShare`'s
 * `'none'`; for an exento traslado, its share of the base rounds to nothing — as a one-cent
 * installment of a large invoice may): it is left out of this Pago, and the next ones report it, so
 * the Pagos still add up to the document.
 */
function noShare(
  t: {
    tipoFactor: string;
    tasaOCuota?: string | undefined;
    documento?: { base: string; importe: string; total: string } | undefined;
  },
  saldoAnt: Dec,
  pagado: Dec,
  decimals: number,
): boolean {
  if (t.documento === undefined) return false;
  if (t.tipoFactor === 'Exento' || t.tasaOCuota === undefined)
    return baseShare(t.documento, saldoAnt, pagado, decimals) === undefined;
  return proportionalShare(t.documento, saldoAnt, pagado, t.tasaOCuota, decimals) === 'none';
}
