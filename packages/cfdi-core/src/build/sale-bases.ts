/**
 * A line's concepto from its price: before tax, as given; with tax included, its base solved from
 * its gross — with the currency's decimals where one gives the gross exactly, else the nearest —
 * and the comprobante's rounding carried by one line at six decimals (or, for hundreds of lines,
 * every line at its six-decimal base). sale-lines.ts decides which a sale needs.
 */
import type { ConceptoRequest } from '../validate/request-schema.ts';
import { computeConcepto } from './compute-totals.ts';
import { Dec, decimalsOf, fixed, sum, ZERO } from './money.ts';
import type { LineTaxes, SaleLine } from './sale-lines.ts';

/** The concepto for a line at a given ValorUnitario (the unit's value before tax). */
export function conceptoOf(line: SaleLine, valorUnitario: string): ConceptoRequest {
  const t = line.taxes;
  const traslados: ConceptoRequest['traslados'] = [];
  if (t.ieps !== undefined) traslados.push({ impuesto: '003', tipoFactor: 'Tasa', tasaOCuota: t.ieps });
  if (t.iva === 'exento') traslados.push({ impuesto: '002', tipoFactor: 'Exento' });
  else if (t.iva !== undefined) traslados.push({ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: t.iva });
  const retenciones: ConceptoRequest['retenciones'] = [];
  if (t.retencionIsr !== undefined)
    retenciones.push({ impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: t.retencionIsr });
  if (t.retencionIva !== undefined)
    retenciones.push({ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: t.retencionIva });
  const taxed = traslados.length + retenciones.length > 0;
  return {
    claveProdServ: line.claveProdServ,
    ...(line.noIdentificacion !== undefined ? { noIdentificacion: line.noIdentificacion } : {}),
    cantidad: line.cantidad,
    claveUnidad: line.claveUnidad,
    ...(line.unidad !== undefined ? { unidad: line.unidad } : {}),
    descripcion: line.descripcion,
    valorUnitario,
    ...(line.descuento !== undefined ? { descuento: line.descuento } : {}),
    objetoImp: taxed ? '02' : '01',
    traslados,
    retenciones,
  };
}

/**
 * What a concepto adds to the comprobante's Total when every other concepto's values have the
 * currency's decimals: its Importe, less its Descuento, plus its traslados, less its retenciones,
 * each rounded to the currency's decimals (as the comprobante's totals round them).
 */
export function conceptoGross(c: ConceptoRequest, decimals: number): Dec {
  const a = computeConcepto(c, decimals);
  const r = (v: string | undefined) => new Dec(fixed(new Dec(v ?? 0), decimals));
  return r(a.importe)
    .minus(r(a.descuento))
    .plus(sum(a.traslados.map((t) => r(t.importe))))
    .minus(sum(a.retenciones.map((t) => r(t.importe))));
}

const TENTH_OF_A_CENT = new Dec('0.001');

/** Lines tried as the carrier of the comprobante's rounding, largest first. */
const MAX_CARRIERS = 8;

/**
 * Every line with tax included at its base to six decimals (gross ÷ (1 + its rate)) — or, with
 * `keepExact`, at its base with the currency's decimals when that gives its gross exactly — the others
 * as they are; then, if the rounded Total still misses, the largest such lines in turn have their
 * base bisected (the Total grows with it) until the Total is `paid`. Undefined when none can.
 */
export function fineBasesForAll(
  lines: readonly SaleLine[],
  nominal: readonly Dec[],
  coarse: readonly ConceptoRequest[],
  decimals: number,
  totalOf: (conceptos: ConceptoRequest[]) => Dec,
  paid: Dec,
  keepExact = false,
): ConceptoRequest[] | undefined {
  const micro = new Dec('0.000001');
  const at = (i: number, base: Dec) => conceptoOf(lines[i]!, fixed(base.dividedBy(lines[i]!.cantidad), 6));
  const exact = (i: number) => nominal[i]!.dividedBy(effectiveRate(lines[i]!.taxes).plus(1));
  const exactAlready = (i: number) => keepExact && conceptoGross(coarse[i]!, decimals).isEqualTo(nominal[i]!);
  const conceptos = lines.map((line, i) => (line.taxIncluded && !exactAlready(i) ? at(i, exact(i)) : coarse[i]!));
  if (totalOf(conceptos).isEqualTo(paid)) return conceptos;
  if (keepExact) return leastCarried(lines, nominal, conceptos, decimals, totalOf, paid);
  const carriers = lines
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => line.taxIncluded && new Dec(line.cantidad).isEqualTo(1))
    .sort((a, b) => (nominal[b.i]!.comparedTo(nominal[a.i]!) ?? 0) || a.i - b.i)
    .slice(0, MAX_CARRIERS);
  const step = new Dec(1).shiftedBy(-decimals);
  for (const { i } of carriers) {
    const trial = (base: Dec) => [...conceptos.slice(0, i), at(i, base), ...conceptos.slice(i + 1)];
    // The Total, as the base grows, passes the target within a few cents of the exact base.
    let low = exact(i).minus(step.times(5));
    let high = exact(i).plus(step.times(5));
    if (!low.isGreaterThan(0)) continue;
    for (let n = 0; n < 40 && high.minus(low).isGreaterThan(micro); n++) {
      const mid = new Dec(fixed(low.plus(high).dividedBy(2), 6));
      const candidate = trial(mid);
      const total = totalOf(candidate);
      if (total.isEqualTo(paid)) return candidate;
      if (total.isLessThan(paid)) low = mid;
      else high = mid;
    }
  }
  return undefined;
}

/**
 * The comprobante's one rounding carried where it shows least: each line with tax included (the
 * largest few) tries the six-decimal base nearest its own that makes the Total `paid` (fineBase);
 * the one whose gross moves least carries it.
 */
function leastCarried(
  lines: readonly SaleLine[],
  nominal: readonly Dec[],
  conceptos: readonly ConceptoRequest[],
  decimals: number,
  totalOf: (conceptos: ConceptoRequest[]) => Dec,
  paid: Dec,
): ConceptoRequest[] | undefined {
  let best: { conceptos: ConceptoRequest[]; moved: Dec } | undefined;
  const carriers = lines
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => line.taxIncluded)
    .sort((a, b) => (nominal[b.i]!.comparedTo(nominal[a.i]!) ?? 0) || a.i - b.i)
    .slice(0, MAX_CARRIERS * 4);
  for (const { line, i } of carriers) {
    const trial = (c: ConceptoRequest) => [...conceptos.slice(0, i), c, ...conceptos.slice(i + 1)];
    const others = conceptos.filter((_, n) => n !== i);
    const fine = fineBase(line, nominal[i]!, others, decimals, (c) => totalOf(trial(c)).isEqualTo(paid));
    if (!fine) continue;
    const a = computeConcepto(fine, 6);
    const gross = new Dec(a.importe)
      .plus(sum(a.traslados.map((t) => new Dec(t.importe ?? 0))))
      .minus(sum(a.retenciones.map((t) => new Dec(t.importe ?? 0))));
    const moved = gross.minus(nominal[i]!).abs();
    if (!best || moved.isLessThan(best.moved)) best = { conceptos: trial(fine), moved };
    if (moved.isLessThan(TENTH_OF_A_CENT)) break; // below what any printed amount shows
  }
  return best?.conceptos;
}

/** A before-tax line's ValorUnitario: its unit price, or its amount ÷ cantidad when that is exact at 6 decimals. */
export function valorUnitarioBeforeTax(line: SaleLine): string | undefined {
  if (line.unitPrice !== undefined) return line.unitPrice;
  const cantidad = new Dec(line.cantidad);
  if (!cantidad.isGreaterThan(0)) return undefined;
  const unit = new Dec(line.amount ?? 0).dividedBy(cantidad);
  return unit.decimalPlaces()! <= 6 && unit.times(cantidad).isEqualTo(line.amount ?? 0)
    ? unit.toFixed(Math.max(decimalsOf(line.amount ?? '0'), unit.decimalPlaces()!))
    : undefined;
}

/** Σ traslado rates (IVA on top of IEPS) − Σ retención rates: gross ≈ base × (1 + this). */
function effectiveRate(t: LineTaxes): Dec {
  const ieps = new Dec(t.ieps ?? 0);
  const iva = t.iva === undefined || t.iva === 'exento' ? ZERO : new Dec(t.iva);
  return ieps
    .plus(iva.times(ieps.plus(1)))
    .minus(t.retencionIsr ?? 0)
    .minus(t.retencionIva ?? 0);
}

/** The concepto for a base (the line's Importe before tax) spread over its units. */
function atBase(line: SaleLine, base: Dec, decimals: number): ConceptoRequest {
  const cantidad = new Dec(line.cantidad);
  const unit = base.dividedBy(cantidad);
  const coarse = fixed(unit, decimals);
  // A unit value with the currency's decimals when it gives the base exactly, else six decimals.
  const valorUnitario = new Dec(coarse).times(cantidad).isEqualTo(base) ? coarse : fixed(unit, 6);
  return conceptoOf(line, valorUnitario);
}

/** The concepto at the base with the currency's decimals whose gross is `gross`, or else the nearest one. */
export function coarseBase(line: SaleLine, gross: Dec, decimals: number): ConceptoRequest {
  const step = new Dec(1).shiftedBy(-decimals);
  const estimate = new Dec(fixed(gross.dividedBy(effectiveRate(line.taxes).plus(1)), decimals));
  let best: { concepto: ConceptoRequest; off: Dec } | undefined;
  // The estimate rounds to within a step of the exact base: its neighbours are the candidates.
  for (const k of [0, -1, 1]) {
    const base = estimate.plus(step.times(k));
    if (!base.isGreaterThan(0)) continue;
    const concepto = atBase(line, base, decimals);
    const off = conceptoGross(concepto, decimals).minus(gross).abs();
    if (off.isZero()) return concepto;
    if (!best || off.isLessThan(best.off)) best = { concepto, off };
  }
  return best?.concepto ?? atBase(line, estimate.isGreaterThan(0) ? estimate : step, decimals);
}

/**
 * A concepto for `line` at a six-decimal base that `fits` (the comprobante's Total is what was
 * paid). The Total is a step function of this base: it changes only where one of the comprobante's
 * rounded sums this concepto enters (SubTotal, its traslado and retención groups, with what the
 * other conceptos put in them) crosses half a cent. Those points are found around the estimate and
 * one base inside each step is tried — each try computed as the comprobante will be.
 */
function fineBase(
  line: SaleLine,
  gross: Dec,
  others: readonly ConceptoRequest[],
  decimals: number,
  fits: (concepto: ConceptoRequest) => boolean,
): ConceptoRequest | undefined {
  // Nearly always within a step of the estimate; a wider window only when that finds none.
  return (
    fineBaseWithin(line, gross, others, decimals, fits, 1) ?? fineBaseWithin(line, gross, others, decimals, fits, 4)
  );
}

function fineBaseWithin(
  line: SaleLine,
  gross: Dec,
  others: readonly ConceptoRequest[],
  decimals: number,
  fits: (concepto: ConceptoRequest) => boolean,
  steps: number,
): ConceptoRequest | undefined {
  const step = new Dec(1).shiftedBy(-decimals);
  const half = step.dividedBy(2);
  const t = line.taxes;
  const estimate = gross.dividedBy(effectiveRate(t).plus(1));
  const low = estimate.minus(step.times(steps));
  const high = estimate.plus(step.times(steps));
  // What the other conceptos put in each rounded sum, by the keys computeAmounts groups them with.
  const offsets = new Map<string, Dec>();
  const add = (key: string, value: string | undefined) => offsets.set(key, (offsets.get(key) ?? ZERO).plus(value ?? 0));
  for (const c of others) {
    const a = computeConcepto(c, decimals);
    add('subtotal', a.importe);
    for (const x of a.traslados) add(`T${x.impuesto}|${x.tipoFactor}|${x.tasaOCuota ?? ''}`, x.importe);
    for (const x of a.retenciones) add(`R${x.impuesto}`, x.importe);
  }
  const ieps = new Dec(t.ieps ?? 0);
  const terms: { factor: Dec; key: string }[] = [{ factor: new Dec(1), key: 'subtotal' }];
  if (t.ieps !== undefined) terms.push({ factor: ieps, key: `T003|Tasa|${t.ieps}` });
  if (t.iva !== undefined && t.iva !== 'exento')
    terms.push({ factor: new Dec(t.iva).times(ieps.plus(1)), key: `T002|Tasa|${t.iva}` });
  if (t.retencionIsr !== undefined) terms.push({ factor: new Dec(t.retencionIsr), key: 'R001' });
  if (t.retencionIva !== undefined) terms.push({ factor: new Dec(t.retencionIva), key: 'R002' });
  const points: Dec[] = [low, high];
  for (const { factor, key } of terms) {
    if (factor.isZero()) continue;
    // offset + factor·b crosses (n + ½)·step at b = ((n + ½)·step − offset) / factor.
    const offset = offsets.get(key) ?? ZERO;
    const first = offset.plus(low.times(factor)).dividedBy(step).integerValue(Dec.ROUND_FLOOR);
    const last = offset.plus(high.times(factor)).dividedBy(step).integerValue(Dec.ROUND_CEIL);
    for (let n = first; n.isLessThanOrEqualTo(last); n = n.plus(1)) {
      const b = n.times(step).plus(half).minus(offset).dividedBy(factor);
      if (b.isGreaterThan(low) && b.isLessThan(high)) points.push(b);
    }
  }
  points.sort((a, b) => a.comparedTo(b) ?? 0);
  // Nearest the estimate first: the line's own gross stays as close as can be to its price.
  const mids = points
    .slice(1)
    .map((p, k) => p.plus(points[k]!).dividedBy(2))
    .filter((m) => m.isGreaterThan(0))
    .sort((a, b) => a.minus(estimate).abs().comparedTo(b.minus(estimate).abs()) ?? 0);
  for (const mid of mids) {
    const concepto = conceptoOf(line, fixed(mid.dividedBy(line.cantidad), 6));
    if (fits(concepto)) return concepto;
  }
  return undefined;
}

/**
 * The conceptos with the comprobante's rounding carried, so that its rounded Total is `paid`: the
 * largest lines with tax included are tried in turn at a six-decimal base; when none can carry it
 * alone (a factura global's hundreds of tickets drift by more cents than one line can carry at its
 * own price), every line with tax included is set at its six-decimal base (its gross to a
 * millionth) and one of them carries the one rounding. Undefined when no line can.
 */
export function carryTheCents(
  lines: readonly SaleLine[],
  nominal: readonly Dec[],
  conceptos: readonly ConceptoRequest[],
  decimals: number,
  totalOf: (cs: ConceptoRequest[]) => Dec,
  paid: Dec,
): ConceptoRequest[] | undefined {
  const carriers = lines
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => line.taxIncluded)
    .sort((a, b) => (nominal[b.i]!.comparedTo(nominal[a.i]!) ?? 0) || a.i - b.i)
    // Each try computes the whole comprobante: the largest few lines, not every one of hundreds.
    .slice(0, MAX_CARRIERS);
  for (const { line, i } of carriers) {
    const others = conceptos.filter((_, n) => n !== i);
    const withLine = (c: ConceptoRequest) => [...conceptos.slice(0, i), c, ...conceptos.slice(i + 1)];
    const fine = fineBase(line, nominal[i]!, others, decimals, (c) => totalOf(withLine(c)).isEqualTo(paid));
    if (fine) return withLine(fine);
  }
  return fineBasesForAll(lines, nominal, [...conceptos], decimals, totalOf, paid);
}
