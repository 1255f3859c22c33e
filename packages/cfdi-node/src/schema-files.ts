/** The SAT's schemas a CFDI is validated against, read from the SAT folder. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { catalogSchema, SCHEMA_FOLDERS } from '@timbra/cfdi-core';

/**
 * Every schema a CFDI is validated against, as `{ fileName, contents }` with the file name relative
 * to the SAT folder (what `SCHEMA_WRAPPER`'s locations and the SAT's own imports expect): the XSDs of
 * `SCHEMA_FOLDERS` read from `satDir`, and the rendered catCFDI.xsd.
 */
export function schemaFiles(satDir: string): { fileName: string; contents: string }[] {
  const read = (dir: string): { fileName: string; contents: string }[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return read(path);
      return name.endsWith('.xsd') ? [{ fileName: relative(satDir, path), contents: readFileSync(path, 'utf8') }] : [];
    });
  return [
    ...SCHEMA_FOLDERS.flatMap((sub) => read(join(satDir, 'cfd', sub))),
    { fileName: 'cfd/catalogos/catCFDI.xsd', contents: catalogSchema() },
  ];
}
