/**
 * The shape of a SAT validation rule (Anexo 20's "matriz de errores": CFDI40xxx for the comprobante,
 * CRP20xxx for the Pagos 2.0 complement) and what a broken rule reports.
 */
import type { XmlElement } from '../xml/xml-node.ts';

/**
 * How a rule is kept (docs/fiscal-rules.md lists each rule with it):
 * - `enforced`: checked on the request's document before a folio is taken and again when freezing;
 *   the PAC sandbox checks it too.
 * - `construction`: the builder cannot write a document that breaks it (a check still runs in the
 *   sandbox, so a hand-made document is rejected there).
 * - `sandbox`: needs the SAT's taxpayer list (L_RFC): the sandbox checks it against its registry;
 *   in production only the PAC can.
 * - `needs-sat-data`: needs SAT data not available offline (the day's exchange rates, or the
 *   c_ClaveProdServ / c_CodigoPostal catalogues when the operator did not supply them): checked by
 *   shape only, and fully when the data is given.
 */
export type RuleStatus = 'enforced' | 'construction' | 'sandbox' | 'needs-sat-data';

/** A taxpayer as the SAT lists it (L_RFC): what receptor and emisor data must match. */
export interface Taxpayer {
  rfc: string;
  /** Name or razón social exactly as registered (without the régimen de capital). */
  name: string;
  /** Postal code of the domicilio fiscal. */
  postalCode: string;
  /** Régimenes the taxpayer is registered in (c_RegimenFiscal). */
  regimenes: readonly string[];
  /** `active`: inscrito no cancelado. */
  status: 'active' | 'cancelled';
}

/** What a rule may consult besides the document. */
export interface RuleContext {
  /** The SAT's taxpayer list; the L_RFC rules (CFDI40138/39, 40143/45/47) run only when given. */
  taxpayer?: (rfc: string) => Taxpayer | undefined;
  /** c_ClaveProdServ as the operator supplied it; without it ClaveProdServ is checked by shape. */
  clavesProdServ?: ReadonlySet<string>;
  /** c_CodigoPostal as the operator supplied it; without it postal codes are checked by shape. */
  codigosPostales?: ReadonlySet<string>;
  /** The moment the document is checked, for CFDI40136 (Año of InformacionGlobal). */
  now?: Date;
}

/** One broken rule: its SAT code, where (an XPath to the node) and what, in Spanish and English. */
export interface RuleViolation {
  rule: string;
  path: string;
  es: string;
  en: string;
}

/** Reports a violation of the rule being run at `path`, with an optional detail (English). */
export type Report = (path: string, detail?: string) => void;

export interface SatRule {
  /** The SAT's code: CFDI40xxx or CRP20xxx. */
  code: string;
  /** The node or attribute the rule is about (for the docs). */
  node: string;
  es: string;
  en: string;
  status: RuleStatus;
  /** Which documents it applies to; absent: every one. */
  applies?: readonly ('I' | 'E' | 'P')[];
  check: (doc: XmlElement, report: Report, ctx: RuleContext) => void;
}
