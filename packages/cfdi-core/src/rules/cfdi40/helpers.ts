/** What the CFDI 4.0 rules share: catalogue lookups, who the receptor is, the tax checks. */
import { RFC_EXTRANJERO, RFC_PUBLICO_GENERAL, rfcKind } from '../../validate/rfc.ts';
import { C_TASA_O_CUOTA } from '../../validate/sat-catalogs.ts';
import { Dec, ZERO } from '../../build/money.ts';
import {
  a,
  allTaxes,
  at,
  checkGroupSums,
  child,
  children,
  comprobanteImpuestos,
  decimalsIn,
  monedaDecimals,
  num,
  receptor,
  root,
  taxLimits,
  within,
  type Located,
} from '../nodes.ts';
import type { Report } from '../rule.ts';
import type { XmlElement } from '../../xml/xml-node.ts';

/** Name the SAT requires on a CFDI to público en general (RFC XAXX010101000). */
export const NOMBRE_PUBLICO_GENERAL = 'PUBLICO EN GENERAL';

export const has = (catalog: object, key: string | undefined) => key !== undefined && Object.hasOwn(catalog, key);
export const R = root;

/** Whether a c_TasaOCuota row allows this rate for the tax, factor and kind (traslado/retención). */
export function tasaOCuotaAllowed(
  impuesto: string,
  factor: string,
  rate: string,
  kind: 'traslado' | 'retencion',
): boolean {
  // The answer depends on these four texts only, and a merchant's documents repeat a few rates.
  const key = `${impuesto}|${factor}|${rate}|${kind}`;
  let allowed = TASA_ALLOWED.get(key);
  if (allowed === undefined) {
    allowed = /^[0-9]+(\.[0-9]+)?$/.test(rate) && tasaOCuotaRow(impuesto, factor, rate, kind);
    if (TASA_ALLOWED.size >= 1000) TASA_ALLOWED.clear();
    TASA_ALLOWED.set(key, allowed);
  }
  return allowed;
}
export const TASA_ALLOWED = new Map<string, boolean>();

/** Whether some c_TasaOCuota row allows `rate` (a number's text: its decimals count for fixed rates). */
export function tasaOCuotaRow(impuesto: string, factor: string, rate: string, kind: 'traslado' | 'retencion') {
  const value = new Dec(rate);
  return C_TASA_O_CUOTA.some(
    (row) =>
      row.impuesto === impuesto &&
      row.factor === factor &&
      row[kind] &&
      (row.value !== undefined
        ? value.isEqualTo(row.value) && decimalsIn(rate) === 6
        : within(value, new Dec(row.min ?? 0), new Dec(row.max ?? 0))),
  );
}

export function personaOf(rfc: string | undefined): 'fisica' | 'moral' | 'generico' | null {
  return rfc === undefined ? null : rfcKind(rfc);
}

export const isGeneric = (rfc: string | undefined) => rfc === RFC_PUBLICO_GENERAL || rfc === RFC_EXTRANJERO;

/** Reports `name` on a receptor that is not the foreign generic RFC (CFDI40151, CFDI40154). */
export function foreignOnly(doc: XmlElement, name: string, report: Report): void {
  const r = receptor(doc);
  if (r && a(r, name) !== undefined && a(r, 'Rfc') !== RFC_EXTRANJERO) report(at(r, name));
}

/** Σ of an attribute over nodes (absent counts 0). */
export function total(nodes: readonly Located[], name: string): Dec {
  let s = ZERO;
  for (const n of nodes) s = s.plus(num(n, name) ?? ZERO);
  return s;
}

/**
 * The comprobante's Traslados against the conceptos' (CFDI40215 for Base, with the groups; CFDI40221
 * for Importe, which an Exento group does not carry).
 */
export function checkTraslados(doc: XmlElement, sum: 'Base' | 'Importe', report: Report): void {
  const imp = comprobanteImpuestos(doc);
  const key = (t: Located) => `${a(t, 'Impuesto')}|${a(t, 'TipoFactor')}|${a(t, 'TasaOCuota') ?? ''}`;
  checkGroupSums(
    {
      sources: allTaxes(doc, 'Traslado'),
      written: children(imp ? child(imp, 'Traslados') : undefined, 'Traslado'),
      keys: { source: key, written: key },
      sums: { [sum]: sum },
      decimals: monedaDecimals(a(R(doc), 'Moneda')),
      missingAt: `${imp?.path ?? R(doc).path}/cfdi:Traslados`,
      applies: (t) => sum === 'Base' || a(t, 'TipoFactor') !== 'Exento',
      groups: sum === 'Base',
    },
    report,
  );
}

/** A concepto traslado's TasaOCuota and Importe: absent when Exento (CFDI40177), else present (40178). */
export function rateAndAmount(doc: XmlElement, exento: boolean, report: Report): void {
  for (const t of allTaxes(doc, 'Traslado')) {
    if ((a(t, 'TipoFactor') === 'Exento') !== exento) continue;
    for (const name of ['TasaOCuota', 'Importe'])
      if ((a(t, name) !== undefined) === exento) report(at(t, name), exento ? 'must be absent' : 'missing');
  }
}

export function checkTaxImportes(taxes: readonly Located[], report: (path: string, detail?: string) => void): void {
  for (const t of taxes) {
    const base = a(t, 'Base');
    const rate = a(t, 'TasaOCuota');
    const importe = num(t, 'Importe');
    if (base === undefined || rate === undefined || !importe) continue;
    const { min, max } = taxLimits(base, rate, decimalsIn(a(t, 'Importe')));
    if (!within(importe, min, max)) report(at(t, 'Importe'), `limits ${min.toFixed()}…${max.toFixed()}`);
  }
}
