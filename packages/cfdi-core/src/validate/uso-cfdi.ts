/**
 * Which UsoCFDI a receptor may be given (rule CFDI40161): c_UsoCFDI says, for each use, the kinds of
 * persona and the receptor régimenes it applies to. One owner: the validation of every request and
 * the choice of a dependent document's UsoCFDI (an Egreso's, a Pago's) both ask here.
 */
import { C_USO_CFDI, type PersonaTipo } from './catalogs.ts';

/** Whether UsoCFDI `uso` applies to a receptor in régimen `regimen` who is a persona `kind`. */
export function usoCfdiAllowed(uso: string, regimen: string, kind: PersonaTipo): boolean {
  const entry = Object.hasOwn(C_USO_CFDI, uso) ? C_USO_CFDI[uso] : undefined;
  return entry !== undefined && entry[kind] && entry.regimenes.includes(regimen);
}

/**
 * The first of `preferred` that applies to this receptor (e.g. an Egreso: G02 where allowed, else
 * S01 — which c_UsoCFDI allows with every régimen but nómina's); undefined when none does.
 */
export function usoCfdiFor(preferred: readonly string[], regimen: string, kind: PersonaTipo): string | undefined {
  return preferred.find((uso) => usoCfdiAllowed(uso, regimen, kind));
}
