/**
 * The two SAT catalogues too large for sat/catalogos — c_ClaveProdServ (~52,000 keys) and
 * c_CodigoPostal (~95,000) — as an operator supplies them: a text or CSV file (the SAT's catCFDI
 * sheet saved as CSV, or phpcfdi's export) whose first column is the key. Loaded once at start-up
 * (`SAT_CLAVE_PROD_SERV_FILE`, `SAT_CODIGO_POSTAL_FILE`), they make the rules CFDI40162, CFDI40126
 * and CFDI40147 check membership instead of shape, wherever the rules run in this process.
 */
import { readFileSync } from 'node:fs';
import type { RuleContext } from './rule.ts';

type OperatorCatalogs = Pick<RuleContext, 'clavesProdServ' | 'codigosPostales'>;

let supplied: OperatorCatalogs = {};

/** The catalogues supplied to this process (empty: shape checks only). */
export function operatorCatalogs(): OperatorCatalogs {
  return supplied;
}

/** Supplies (or, with `{}`, withdraws) the operator's catalogues for every rule run in this process. */
export function setOperatorCatalogs(catalogs: OperatorCatalogs): void {
  supplied = { ...catalogs };
}

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

/** c_ClaveProdServ keys: 8 digits. */
export const CLAVE_PROD_SERV_SHAPE = /^[0-9]{8}$/;
/** c_CodigoPostal keys: 5 digits. */
export const CODIGO_POSTAL_SHAPE = /^[0-9]{5}$/;

/**
 * Loads the catalogue files a process is configured with and supplies them to the rules
 * (`setOperatorCatalogs`; none given: shape checks only). Returns one line per file that cannot be
 * used, naming its variable; the catalogues that loaded are supplied either way.
 */
export function supplyOperatorCatalogs(
  files: { clavesProdServ?: string | undefined; codigosPostales?: string | undefined },
  names: { clavesProdServ: string; codigosPostales: string },
): string[] {
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
  setOperatorCatalogs(catalogs);
  return problems;
}
