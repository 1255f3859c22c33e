/**
 * The SAT rule engine: every CFDI 4.0 and Pagos 2.0 rule that applies to the documents Timbra issues,
 * as named rules run over a document tree. One owner: freezing runs it on the document it is about to
 * seal (and the API on a request's document before it takes a folio), and the PAC sandbox on the
 * documents it receives. docs/fiscal-rules.md lists every rule with its status.
 */
import { CfdiValidationError, type ValidationIssue } from '../errors.ts';
import { attr, type XmlElement } from '../xml/xml-node.ts';
import { CFDI40_RULES } from './cfdi40.ts';
import { PAGOS20_RULES } from './pagos20.ts';
import { inRuleRun } from './nodes.ts';
import type { RuleContext, RuleViolation, SatRule } from './rule.ts';

export type { RuleContext, RuleStatus, RuleViolation, SatRule, Taxpayer } from './rule.ts';
export { NOMBRE_PUBLICO_GENERAL, tasaOCuotaAllowed } from './cfdi40.ts';
export { CLAVE_PROD_SERV_SHAPE, CODIGO_POSTAL_SHAPE, type OperatorCatalogs } from './operator-catalogs.ts';

/**
 * Every rule, in the order of their codes (CFDI 4.0, then Pagos 2.0). A code is the SAT's; where its
 * matrix states one condition that Timbra checks in parts (CFDI40159: 616 for a generic RFC, a
 * registered régimen otherwise), each part is a rule of its own under that code.
 */
export const SAT_RULES: readonly SatRule[] = [...CFDI40_RULES, ...PAGOS20_RULES].sort((x, y) =>
  x.code.localeCompare(y.code),
);

/**
 * The rules broken by a comprobante (empty: it passes every rule the context allows to run): the
 * operator's catalogues, the taxpayer list and the moment of the check come in `ctx`, nothing else.
 */
export function checkSatRules(doc: XmlElement, ctx: RuleContext = {}): RuleViolation[] {
  const tipo = attr(doc, 'TipoDeComprobante') ?? '';
  const violations: RuleViolation[] = [];
  inRuleRun(doc, () => {
    for (const rule of SAT_RULES) {
      if (rule.applies && !rule.applies.includes(tipo as 'I' | 'E' | 'P')) continue;
      rule.check(
        doc,
        (path, detail) =>
          violations.push({
            rule: rule.code,
            path,
            es: rule.es,
            en: detail ? `${rule.en} (${detail})` : rule.en,
          }),
        ctx,
      );
    }
  });
  return violations;
}

/** Violations as validation issues: `<code>: <message>` at the node's path, the code in `rule`. */
export function violationIssues(violations: readonly RuleViolation[]): ValidationIssue[] {
  return violations.map((v) => ({ path: v.path, message: `${v.rule}: ${v.en}`, rule: v.rule }));
}

/** @throws CfdiValidationError listing every broken rule. */
export function assertSatRules(doc: XmlElement, ctx: RuleContext = {}): void {
  const violations = checkSatRules(doc, ctx);
  if (violations.length > 0) throw new CfdiValidationError(violationIssues(violations));
}
