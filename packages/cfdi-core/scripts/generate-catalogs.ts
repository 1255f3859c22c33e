/**
 * `npm run catalogs:generate -w @timbra/cfdi-core` — the SAT catalogues (`sat/catalogos/*.csv`, the
 * SAT's catCFDI for CFDI 4.0; see its README) as typed data: `src/validate/sat-catalogs.ts`. Run it
 * after updating the CSVs; a test fails when the file and the CSVs differ.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';

const here = dirname(fileURLToPath(import.meta.url));
export const CATALOGS_FILE = resolve(here, '../src/validate/sat-catalogs.ts');
export const DEFAULT_CATALOGS_DIR = resolve(here, '../../../sat/catalogos');

type Row = Record<string, string>;

/** c_TasaOCuota names its taxes; rules use c_Impuesto codes. */
function IMPUESTO_BY_NAME(name: string): string {
  if (name.startsWith('IVA')) return '002';
  if (name === 'IEPS') return '003';
  if (name === 'ISR') return '001';
  throw new Error(`unknown impuesto in c_TasaOCuota: ${name}`);
}

/** The catalogues rendered as the TypeScript module, from the CSVs in `dir`. */
export function renderCatalogs(dir: string): string {
  const sources: string[] = [];
  const read = (file: string): Row[] => {
    const text = readFileSync(join(dir, file), 'utf8');
    sources.push(`${file} sha256:${createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
    return parse<Row>(text, { columns: true, skip_empty_lines: true });
  };
  const flag = (v: string | undefined) => v === '1';
  const validity = (r: Row) =>
    `validFrom: ${JSON.stringify(r.vigencia_desde)}, validTo: ${JSON.stringify(r.vigencia_hasta || null)}`;
  const entries = (rows: Row[], extra: (r: Row) => string = () => '') =>
    rows
      .map(
        (r) =>
          `  ${JSON.stringify(r.id)}: { name: ${JSON.stringify((r.texto ?? '').trim())}, ${extra(r)}${validity(r)} },`,
      )
      .join('\n');
  const plain = (name: string, doc: string, file: string) =>
    `/** ${doc} */\nexport const ${name}: Readonly<Record<string, CatalogEntry>> = {\n${entries(read(file))}\n};\n`;
  const list = (v: string) =>
    JSON.stringify(
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );

  const body = [
    `/** c_UsoCFDI, with the personas and the receptor régimenes each use applies to (rule CFDI40161). */
export const C_USO_CFDI: Readonly<Record<string, UsoCfdiEntry>> = {
${entries(read('cfdi_40_usos_cfdi.csv'), (r) => `fisica: ${flag(r.aplica_fisica)}, moral: ${flag(r.aplica_moral)}, regimenes: ${list(r.regimenes_fiscales_receptores ?? '')}, `)}
};
`,
    `/** c_RegimenFiscal, with the personas each régimen applies to. */
export const C_REGIMEN_FISCAL: Readonly<Record<string, RegimenEntry>> = {
${entries(read('cfdi_40_regimenes_fiscales.csv'), (r) => `fisica: ${flag(r.aplica_fisica)}, moral: ${flag(r.aplica_moral)}, `)}
};
`,
    `/** c_FormaPago (\`bancarizado\`: paid through the banking system). */
export const C_FORMA_PAGO: Readonly<Record<string, FormaPagoEntry>> = {
${entries(read('cfdi_40_formas_pago.csv'), (r) => `bancarizado: ${flag(r.es_bancarizado)}, `)}
};
`,
    `/** c_Moneda, with the decimals amounts in it may have and the allowed TipoCambio variation (%). */
export const C_MONEDA: Readonly<Record<string, MonedaEntry>> = {
${entries(read('cfdi_40_monedas.csv'), (r) => `decimals: ${Number(r.decimales)}, variation: ${Number(r.porcentaje_variacion || 0)}, `)}
};
`,
    plain('C_METODO_PAGO', 'c_MetodoPago.', 'cfdi_40_metodos_pago.csv'),
    plain('C_PERIODICIDAD', 'c_Periodicidad (InformacionGlobal).', 'cfdi_40_periodicidades.csv'),
    plain('C_MESES', 'c_Meses (InformacionGlobal).', 'cfdi_40_meses.csv'),
    plain('C_EXPORTACION', 'c_Exportacion.', 'cfdi_40_exportaciones.csv'),
    plain('C_OBJETO_IMP', 'c_ObjetoImp.', 'cfdi_40_objetos_impuestos.csv'),
    plain('C_TIPO_RELACION', 'c_TipoRelacion.', 'cfdi_40_tipos_relaciones.csv'),
    `/** c_Impuesto, with whether each tax may be transferred (traslado) and withheld (retención). */
export const C_IMPUESTO: Readonly<Record<string, ImpuestoEntry>> = {
${entries(read('cfdi_40_impuestos.csv'), (r) => `traslado: ${flag(r.traslado)}, retencion: ${flag(r.retencion)}, `)}
};
`,
    `/** c_TipoDeComprobante, with the largest Total each may carry without a Confirmacion. */
export const C_TIPO_DE_COMPROBANTE: Readonly<Record<string, TipoDeComprobanteEntry>> = {
${entries(read('cfdi_40_tipos_comprobantes.csv'), (r) => `maxTotal: ${JSON.stringify(r.valor_maximo)}, `)}
};
`,
    `/** c_TipoFactor. */
export const C_TIPO_FACTOR: ReadonlySet<string> = new Set(${JSON.stringify(read('cfdi_40_tipos_factores.csv').map((r) => r.id))});
`,
    `/**
 * c_TasaOCuota: the rates each tax and factor may use, a fixed value or a range, for traslados and/or
 * retenciones. \`impuesto\` is the c_Impuesto code ("IVA Crédito aplicado del 50%" is IVA's 8%).
 */
export const C_TASA_O_CUOTA: readonly TasaOCuotaEntry[] = [
${read('cfdi_40_reglas_tasa_cuota.csv')
  .map(
    (r) =>
      `  { impuesto: ${JSON.stringify(IMPUESTO_BY_NAME(r.impuesto ?? ''))}, factor: ${JSON.stringify(r.factor)}, ${r.tipo === 'Rango' ? `min: ${JSON.stringify(r.minimo)}, max: ${JSON.stringify(r.valor)}` : `value: ${JSON.stringify(r.valor)}`}, traslado: ${flag(r.traslado)}, retencion: ${flag(r.retencion)}, ${validity(r)} },`,
  )
  .join('\n')}
];
`,
    `/** c_Pais: the country codes (${read('cfdi_40_paises.csv').length}). */
export const C_PAIS: ReadonlySet<string> = new Set(
  ${JSON.stringify(
    read('cfdi_40_paises.csv')
      .map((r) => r.id)
      .join(' '),
  )}.split(' '),
);
`,
    `/** c_ClaveUnidad: the keys (${read('cfdi_40_claves_unidades.csv').length}; names in the CSV). */
export const C_CLAVE_UNIDAD: ReadonlySet<string> = new Set(
  ${JSON.stringify(
    read('cfdi_40_claves_unidades.csv')
      .map((r) => r.id)
      .join(' '),
  )}.split(' '),
);
`,
  ];
  // claves_unidades and paises are read twice above; list each source once.
  const unique = [...new Set(sources)];
  return `// Generated by \`npm run catalogs:generate -w @timbra/cfdi-core\` from sat/catalogos — do not edit.
// Sources: ${unique.join(', ')}.

/** An entry of a SAT catalogue: its description and validity (ISO dates; \`validTo\` null: in force). */
export interface CatalogEntry {
  name: string;
  validFrom: string;
  validTo: string | null;
}
export interface UsoCfdiEntry extends CatalogEntry {
  fisica: boolean;
  moral: boolean;
  /** The RegimenFiscalReceptor values this use is allowed with. */
  regimenes: readonly string[];
}
export interface RegimenEntry extends CatalogEntry {
  fisica: boolean;
  moral: boolean;
}
export interface FormaPagoEntry extends CatalogEntry {
  bancarizado: boolean;
}
export interface MonedaEntry extends CatalogEntry {
  decimals: number;
  variation: number;
}
export interface ImpuestoEntry extends CatalogEntry {
  traslado: boolean;
  retencion: boolean;
}
export interface TipoDeComprobanteEntry extends CatalogEntry {
  /** Decimal text. */
  maxTotal: string;
}
/** A row of c_TasaOCuota: a fixed \`value\`, or a range \`min\`…\`max\` (decimal text). */
export interface TasaOCuotaEntry {
  impuesto: string;
  factor: string;
  value?: string;
  min?: string;
  max?: string;
  traslado: boolean;
  retencion: boolean;
  validFrom: string;
  validTo: string | null;
}

${body.join('\n')}`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? resolve(process.argv[2]) : DEFAULT_CATALOGS_DIR;
  writeFileSync(CATALOGS_FILE, renderCatalogs(dir));
  process.stdout.write(`wrote ${CATALOGS_FILE} from ${dir}\n`);
}
