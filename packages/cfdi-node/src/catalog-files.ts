/**
 * The operator's SAT catalogues too large for sat/catalogos — c_ClaveProdServ (~52,000 keys) and
 * c_CodigoPostal (~95,000) — read from the files a process is configured with
 * (`SAT_CLAVE_PROD_SERV_FILE`, `SAT_CODIGO_POSTAL_FILE`): a text or CSV file (the SAT's catCFDI
 * sheet saved as CSV, or phpcfdi's export) whose first column is the key. The process passes them to
 * every run of the rules (`RuleContext`), where they replace the shape checks.
 */
import { readFileSync } from 'node:fs';
import { CLAVE_PROD_SERV_SHAPE, CODIGO_POSTAL_SHAPE, type OperatorCatalogs } from '@timbra/cfdi-core';

/**
 * The keys of a catalogue file: the first field of each line that has the key's shape (a header, a
 * title row or a blank line is skipped), quotes removed.
 *
 * @throws Error naming the file when it cannot be read or holds no key at all.
 */
export function loadCatalogKeys(path: string, shape: RegExp): Set<string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the catalogue ${path}: ${(error as Error).message}`, { cause: error });
  }
  const keys = new Set<string>();
  for (const line of text.split(/\r?\n/)) {
    const first =
      line
        .split(/[,;\t]/, 1)[0]
        ?.trim()
        .replace(/^"|"$/g, '') ?? '';
    if (shape.test(first)) keys.add(first);
  }
  if (keys.size === 0) throw new Error(`the catalogue ${path} holds no key of the form ${shape.source}`);
  return keys;
}

/**
 * The catalogue files a process is configured with (none given: shape checks only): the catalogues
 * that loaded, and one line per file that cannot be used, naming its variable.
 */
export function readOperatorCatalogs(
  files: { clavesProdServ?: string | undefined; codigosPostales?: string | undefined },
  names: { clavesProdServ: string; codigosPostales: string },
): { catalogs: OperatorCatalogs; problems: string[] } {
  const problems: string[] = [];
  const catalogs: OperatorCatalogs = {};
  const load = (path: string | undefined, shape: RegExp, name: string): Set<string> | undefined => {
    if (!path) return undefined;
    try {
      return loadCatalogKeys(path, shape);
    } catch (error) {
      problems.push(`${name}: ${(error as Error).message}`);
      return undefined;
    }
  };
  const claves = load(files.clavesProdServ, CLAVE_PROD_SERV_SHAPE, names.clavesProdServ);
  const codigos = load(files.codigosPostales, CODIGO_POSTAL_SHAPE, names.codigosPostales);
  if (claves) catalogs.clavesProdServ = claves;
  if (codigos) catalogs.codigosPostales = codigos;
  return { catalogs, problems };
}

/**
 * The catalogue files the settings name (SAT_CLAVE_PROD_SERV_FILE, SAT_CODIGO_POSTAL_FILE), read as
 * both apps read them at start-up: each problem names its variable.
 */
export function catalogsFromSettings(settings: {
  SAT_CLAVE_PROD_SERV_FILE?: string | undefined;
  SAT_CODIGO_POSTAL_FILE?: string | undefined;
}): { catalogs: OperatorCatalogs; problems: string[] } {
  return readOperatorCatalogs(
    { clavesProdServ: settings.SAT_CLAVE_PROD_SERV_FILE, codigosPostales: settings.SAT_CODIGO_POSTAL_FILE },
    { clavesProdServ: 'SAT_CLAVE_PROD_SERV_FILE', codigosPostales: 'SAT_CODIGO_POSTAL_FILE' },
  );
}
