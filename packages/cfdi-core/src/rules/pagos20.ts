/**
 * The Pagos 2.0 complement's rules (matriz de errores del complemento para recepción de pagos,
 * CRP20xxx): CRP201xx the comprobante a Pago rides on, CRP202xx the complement — its Totales, each
 * Pago, its related documents and their taxes (traslados and retenciones), and the Pago's taxes.
 */
import { COMPROBANTE_RULES, TOTALES_RULES } from './pagos20/comprobante-totales.ts';
import { PAGO_RULES, DOCTO_RULES } from './pagos20/pago-doctos.ts';
import { TAX_DR_RULES, TAX_P_RULES } from './pagos20/taxes.ts';
import type { SatRule } from './rule.ts';

export const PAGOS20_RULES: readonly SatRule[] = [
  ...COMPROBANTE_RULES,
  ...TOTALES_RULES,
  ...PAGO_RULES,
  ...DOCTO_RULES,
  ...TAX_DR_RULES,
  ...TAX_P_RULES,
];
