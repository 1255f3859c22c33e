/**
 * The CFDI 4.0 rules (Anexo 20, matriz de errores CFDI40xxx) that apply to the documents Timbra issues:
 * Ingreso, Egreso and Pago (Traslado and Nómina are not issued). Each is one named rule; the Pagos 2.0
 * complement's own rules are in pagos20.ts.
 */
import { COMPROBANTE_RULES } from './cfdi40/comprobante.ts';
import { GLOBAL_EMISOR_RULES } from './cfdi40/global-emisor.ts';
import { RECEPTOR_RULES } from './cfdi40/receptor.ts';
import { CONCEPTOS_RULES } from './cfdi40/conceptos.ts';
import { IMPUESTOS_RULES } from './cfdi40/impuestos.ts';
import type { SatRule } from './rule.ts';

export { NOMBRE_PUBLICO_GENERAL, tasaOCuotaAllowed } from './cfdi40/helpers.ts';
export type { RuleContext } from './rule.ts';

/** Every CFDI 4.0 rule, part by part of the document (rules/cfdi40/: one file a part). */
export const CFDI40_RULES: readonly SatRule[] = [
  ...COMPROBANTE_RULES,
  ...GLOBAL_EMISOR_RULES,
  ...RECEPTOR_RULES,
  ...CONCEPTOS_RULES,
  ...IMPUESTOS_RULES,
];
