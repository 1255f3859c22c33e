/** What the Pagos 2.0 rules share: the complement's nodes, its taxes, how a rule is written. */
import { NS, type XmlElement } from '../../xml/xml-node.ts';
import { child, children, num, pagos, type Located } from '../nodes.ts';
import type { Report, RuleStatus, SatRule } from '../rule.ts';

export const P = NS.pago20;
export const pagoNodes = (doc: XmlElement) => children(pagos(doc), 'Pago', P);
export const doctos = (pago: Located) => children(pago, 'DoctoRelacionado', P);
export const has = (catalog: object, key: string | undefined) => key !== undefined && Object.hasOwn(catalog, key);

export type Kind = 'Traslado' | 'Retencion';
export const PLURAL: Record<Kind, string> = { Traslado: 'Traslados', Retencion: 'Retenciones' };
export const KIND_ES: Record<Kind, string> = { Traslado: 'Traslado', Retencion: 'Retención' };

/** A related document's TrasladoDR or RetencionDR nodes. */
export function taxesDR(docto: Located, kind: Kind): Located[] {
  const imp = child(docto, 'ImpuestosDR', P);
  return children(imp ? child(imp, `${PLURAL[kind]}DR`, P) : undefined, `${kind}DR`, P);
}

/** A Pago's TrasladoP or RetencionP nodes. */
export function taxesP(pago: Located, kind: Kind): Located[] {
  const imp = child(pago, 'ImpuestosP', P);
  return children(imp ? child(imp, `${PLURAL[kind]}P`, P) : undefined, `${kind}P`, P);
}

/** Every related document of every Pago, with the Pago it belongs to. */
export function* eachDocto(doc: XmlElement): Generator<{ pago: Located; docto: Located }> {
  for (const pago of pagoNodes(doc)) for (const docto of doctos(pago)) yield { pago, docto };
}

/** Every TrasladoDR or RetencionDR of the document. */
export function* eachTaxDR(doc: XmlElement, kind: Kind): Generator<Located> {
  for (const { docto } of eachDocto(doc)) yield* taxesDR(docto, kind);
}

/** A rule of a Pago: every rule here applies to Pagos only. */
export function rule(
  code: string,
  node: string,
  es: string,
  en: string,
  status: RuleStatus,
  check: (doc: XmlElement, report: Report) => void,
): SatRule {
  return { code, node, es, en, status, applies: ['P'], check };
}

export const isZero = (node: Located | undefined, name: string) => num(node, name)?.isZero() ?? false;
