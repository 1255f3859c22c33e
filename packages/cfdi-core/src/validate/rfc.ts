import type { PersonaTipo } from './catalogs.ts';

/** RFC for sales to the general public (público en general). */
export const RFC_PUBLICO_GENERAL = 'XAXX010101000';
/** RFC for foreign customers without a Mexican RFC. */
export const RFC_EXTRANJERO = 'XEXX010101000';

// Anexo 20 shapes (tdCFDI t_RFC_PM / t_RFC_PF): 3 (moral) or 4 (física) letters, a YYMMDD date and
// a 3-character homoclave whose last character is a digit or 'A'.
const MORAL = /^[A-Z&Ñ]{3}[0-9]{2}(0[1-9]|1[012])(0[1-9]|[12][0-9]|3[01])[A-Z0-9]{2}[0-9A]$/u;
const FISICA = /^[A-Z&Ñ]{4}[0-9]{2}(0[1-9]|1[012])(0[1-9]|[12][0-9]|3[01])[A-Z0-9]{2}[0-9A]$/u;

/**
 * Classifies an RFC by its shape: `moral` (12 characters), `fisica` (13 characters), `generico`
 * (XAXX010101000 / XEXX010101000), or `null` when it has neither shape.
 */
export function rfcKind(rfc: string): PersonaTipo | 'generico' | null {
  if (rfc === RFC_PUBLICO_GENERAL || rfc === RFC_EXTRANJERO) return 'generico';
  if (MORAL.test(rfc)) return 'moral';
  if (FISICA.test(rfc)) return 'fisica';
  return null;
}
