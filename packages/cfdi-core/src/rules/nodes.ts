/** Reading a CFDI tree for the rules: nodes with the XPath each violation reports. */
import { currencyDecimals } from '../build/compute-totals.ts';
import { Dec, decimalsOf } from '../build/money.ts';
import { attr, childElements, NS, type XmlElement } from '../xml/xml-node.ts';

export const ROOT = '/cfdi:Comprobante';

export interface Located {
  el: XmlElement;
  path: string;
}

/** The first child `cfdi:<local>` (or of namespace `ns`), with its path under `parent`. */
export function child(parent: Located, local: string, ns: string = NS.cfdi): Located | undefined {
  const found = childElements(parent.el, ns, local)[0];
  return found ? { el: found, path: `${parent.path}/${prefixOf(ns)}:${local}` } : undefined;
}

/** Every child `cfdi:<local>`, with XPath positions (1-based). */
export function children(parent: Located | undefined, local: string, ns: string = NS.cfdi): Located[] {
  if (!parent) return [];
  return childElements(parent.el, ns, local).map((el, i) => ({
    el,
    path: `${parent.path}/${prefixOf(ns)}:${local}[${i + 1}]`,
  }));
}

function prefixOf(ns: string): string {
  if (ns === NS.pago20) return 'pago20';
  if (ns === NS.tfd) return 'tfd';
  return 'cfdi';
}

export const root = (doc: XmlElement): Located => ({ el: doc, path: ROOT });
export const at = (node: Located, name: string): string => `${node.path}/@${name}`;
export const a = (node: Located | undefined, name: string): string | undefined =>
  node ? attr(node.el, name) : undefined;

/** A decimal attribute, or undefined when absent or not a number (the XSD's business). */
export function num(node: Located | undefined, name: string): Dec | undefined {
  const v = a(node, name);
  if (v === undefined || !/^-?[0-9]+(\.[0-9]+)?$/.test(v)) return undefined;
  return new Dec(v);
}

export const tipoOf = (doc: XmlElement): string => attr(doc, 'TipoDeComprobante') ?? '';

export const emisor = (doc: XmlElement) => child(root(doc), 'Emisor');
export const receptor = (doc: XmlElement) => child(root(doc), 'Receptor');
/** The run of the rules in progress (`inRuleRun`), with what it has gathered so far. */
let run: { doc: XmlElement; conceptos?: Located[]; Traslado?: Located[]; Retencion?: Located[] } | undefined;

/** The conceptos, with their XPath positions (gathered once in a run of the rules). */
export function conceptos(doc: XmlElement): readonly Located[] {
  const gather = () => children(child(root(doc), 'Conceptos'), 'Concepto');
  return run?.doc === doc ? (run.conceptos ??= gather()) : gather();
}

/** Every concepto's traslados or retenciones, in document order (gathered once in a run of the rules). */
export function allTaxes(doc: XmlElement, kind: 'Traslado' | 'Retencion'): readonly Located[] {
  const gather = () => conceptos(doc).flatMap((c) => conceptoTaxes(c, kind));
  return run?.doc === doc ? (run[kind] ??= gather()) : gather();
}

/**
 * A run of the rules over one document: the nodes most rules walk (the conceptos and their taxes)
 * are gathered once and shared, read-only, for the run's length. The document must not change shape
 * during the run (the rules only read it); outside a run each call walks the tree.
 */
export function inRuleRun<T>(doc: XmlElement, fn: () => T): T {
  const outer = run;
  run = { doc };
  try {
    return fn();
  } finally {
    run = outer;
  }
}

export const comprobanteImpuestos = (doc: XmlElement) => child(root(doc), 'Impuestos');

/** The concepto's traslados / retenciones. */
export function conceptoTaxes(c: Located, kind: 'Traslado' | 'Retencion'): Located[] {
  const impuestos = child(c, 'Impuestos');
  const group = impuestos ? child(impuestos, kind === 'Traslado' ? 'Traslados' : 'Retenciones') : undefined;
  return children(group, kind);
}

/** The Pagos 2.0 complement, when present. */
export function pagos(doc: XmlElement): Located | undefined {
  const complemento = child(root(doc), 'Complemento');
  return complemento ? child(complemento, 'Pagos', NS.pago20) : undefined;
}

/** Whether `[min, max]` (the SAT's limits) contains `value`. */
export function within(value: Dec, min: Dec, max: Dec): boolean {
  return !value.isLessThan(min) && !value.isGreaterThan(max);
}

/**
 * Anexo 20's limits for a product written with `decimals` decimals: each factor ± half a unit of its
 * last written decimal; the lower limit truncated, the upper one rounded up to `decimals`.
 */
export function productLimits(x: string, y: string, decimals: number): { min: Dec; max: Dec } {
  const [dx, dy] = [new Dec(x), new Dec(y)];
  const [hx, hy] = [halfUnit(decimalsOf(x)), halfUnit(decimalsOf(y))];
  const min = dx.minus(hx).times(dy.minus(hy)).decimalPlaces(decimals, Dec.ROUND_DOWN);
  const max = dx.plus(hx).times(dy.plus(hy)).decimalPlaces(decimals, Dec.ROUND_UP);
  return { min, max };
}

/** Half a unit of the last of `decimals` decimals (2 → 0.005): exact, from a table. */
function halfUnit(decimals: number): Dec {
  return (HALF_UNITS[decimals] ??= new Dec(5).shiftedBy(-decimals - 1));
}
const HALF_UNITS: Dec[] = [];

/**
 * Limits for a tax amount: (Base ± half a unit of its last decimal) × rate, truncated / rounded up to
 * the decimals of the written Importe.
 */
export function taxLimits(base: string, rate: string, decimals: number): { min: Dec; max: Dec } {
  const [b, r, h] = [new Dec(base), new Dec(rate), halfUnit(decimalsOf(base))];
  const min = b.minus(h).times(r).decimalPlaces(decimals, Dec.ROUND_DOWN);
  const max = b.plus(h).times(r).decimalPlaces(decimals, Dec.ROUND_UP);
  return { min, max };
}

/** What `checkGroupSums` compares. */
export interface GroupSums {
  /** The nodes summed (the conceptos' traslados, a Pago's TrasladosDR…). */
  sources: readonly Located[];
  /** The summary nodes written (the comprobante's Traslados, a Pago's TrasladosP…). */
  written: readonly Located[];
  keys: { source: (n: Located) => string; written: (n: Located) => string };
  /** Written attribute → the source attribute it sums. */
  sums: Readonly<Record<string, string>>;
  decimals: number;
  /** Where a group left out is reported. */
  missingAt: string;
  /** Whether a written node carries this attribute (an Exento traslado has no Importe). */
  applies?: (n: Located, writtenAttr: string) => boolean;
  /** Whether to report groups written twice, written with no source, or left out (default true). */
  groups?: boolean;
  /** What each source's values are divided by before summing (a Pago's EquivalenciaDR; default 1). */
  divisor?: (n: Located) => Dec;
}

/**
 * A summary node list against the nodes it sums: each source falls in the group its key gives it,
 * and each written group must carry, for every attribute of `sums`, the group's sum rounded to
 * `decimals`. Reports a wrong sum and (unless `groups` is false) a written group no source has or
 * listed twice, and a group left out.
 */
export function checkGroupSums(g: GroupSums, report: (path: string, detail?: string) => void): void {
  const { keys, decimals, applies = () => true, groups = true, divisor } = g;
  const expected = new Map<string, Map<string, Dec>>();
  for (const n of g.sources) {
    const group = expected.get(keys.source(n)) ?? new Map<string, Dec>();
    for (const [writtenAttr, sourceAttr] of Object.entries(g.sums))
      group.set(
        writtenAttr,
        (group.get(writtenAttr) ?? new Dec(0)).plus(
          divisor ? (num(n, sourceAttr) ?? new Dec(0)).dividedBy(divisor(n)) : (num(n, sourceAttr) ?? 0),
        ),
      );
    expected.set(keys.source(n), group);
  }
  const seen = new Set<string>();
  for (const n of g.written) {
    const key = keys.written(n);
    const group = expected.get(key);
    if (!group || seen.has(key)) {
      if (groups) report(n.path, 'nothing it sums has this group (or it is listed twice)');
      continue;
    }
    seen.add(key);
    for (const [writtenAttr, total] of group) {
      const rounded = total.decimalPlaces(decimals);
      if (applies(n, writtenAttr) && !num(n, writtenAttr)?.isEqualTo(rounded))
        report(at(n, writtenAttr), `expected ${rounded.toFixed()}`);
    }
  }
  if (groups) for (const key of expected.keys()) if (!seen.has(key)) report(g.missingAt, `missing ${key}`);
}

/** Decimals written in an attribute's value (absent: 0). */
export const decimalsIn = (value: string | undefined): number => decimalsOf(value ?? '');

/** Decimals amounts in this currency may have (c_Moneda; 2 when absent or unknown). */
export const monedaDecimals = (moneda: string | undefined): number => currencyDecimals(moneda ?? '');
