/**
 * The SAT catálogos (Anexo 20, catCFDI) the documents Timbra issues need, as the validation rules use
 * them. The SAT's own data comes from `sat-catalogs.ts`, generated from `sat/catalogos/*.csv`
 * (`npm run catalogs:generate -w @timbra/cfdi-core`); what is here is derived from it, plus the few
 * choices of Timbra's own (MONEDA: the currencies it invoices in).
 */
import {
  C_EXPORTACION,
  C_FORMA_PAGO,
  C_MESES,
  C_METODO_PAGO,
  C_MONEDA,
  C_OBJETO_IMP,
  C_PERIODICIDAD,
  C_REGIMEN_FISCAL,
  C_TIPO_RELACION,
  C_USO_CFDI,
  type CatalogEntry,
} from './sat-catalogs.ts';

export { C_CLAVE_UNIDAD, C_PAIS, C_PERIODICIDAD, C_USO_CFDI, C_REGIMEN_FISCAL } from './sat-catalogs.ts';

/** code → description, for the catalogues whose entries are just that. */
const names = (catalog: Readonly<Record<string, CatalogEntry>>): Readonly<Record<string, string>> =>
  Object.fromEntries(Object.entries(catalog).map(([code, entry]) => [code, entry.name.replace(/\.$/, '')]));

/** c_FormaPago. */
export const FORMA_PAGO = names(C_FORMA_PAGO);

/** c_MetodoPago. */
export const METODO_PAGO = names(C_METODO_PAGO);

/** c_UsoCFDI (which personas and régimenes each use applies to: C_USO_CFDI, rule CFDI40161). */
export const USO_CFDI = names(C_USO_CFDI);

/** Which kind of taxpayer a régimen applies to (persona física, moral, or both). */
export type PersonaTipo = 'fisica' | 'moral';

/** c_RegimenFiscal, with the kinds of persona each régimen applies to. */
export const REGIMEN_FISCAL: Readonly<Record<string, { name: string; applies: readonly PersonaTipo[] }>> =
  Object.fromEntries(
    Object.entries(C_REGIMEN_FISCAL).map(([code, r]) => [
      code,
      {
        name: r.name,
        applies: [...(r.fisica ? (['fisica'] as const) : []), ...(r.moral ? (['moral'] as const) : [])],
      },
    ]),
  );

/** c_ObjetoImp. */
export const OBJETO_IMP = names(C_OBJETO_IMP);

/** c_TipoRelacion. */
export const TIPO_RELACION = names(C_TIPO_RELACION);

/** c_Exportacion. */
export const EXPORTACION = names(C_EXPORTACION);

/** c_Periodicidad (InformacionGlobal). */
export const PERIODICIDAD = names(C_PERIODICIDAD);

/** c_Meses (InformacionGlobal): 01–12 months, 13–18 bimesters. */
export const MESES = names(C_MESES);

/**
 * c_Moneda: the currencies Timbra invoices in, with the decimals the SAT allows for amounts in each
 * (from C_MONEDA). `XXX` is the "no currency" code used by the Pago comprobante.
 */
export const MONEDA: Readonly<
  Record<string, { decimals: number; /** TipoCambio variation allowed, % */ variation: number }>
> = Object.fromEntries(
  ['MXN', 'USD', 'EUR', 'CAD', 'GBP', 'CHF', 'CNY', 'BRL', 'ARS', 'COP', 'CLP', 'JPY', 'KRW', 'XXX'].map((code) => {
    const moneda = C_MONEDA[code];
    if (!moneda) throw new Error(`${code} is not in c_Moneda`);
    return [code, { decimals: moneda.decimals, variation: moneda.variation }];
  }),
);
