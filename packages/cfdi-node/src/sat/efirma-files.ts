/**
 * An organization's e.firma (FIEL) from secret files: `<dir>/<RFC>.cer`, `<RFC>.key` and
 * `<RFC>.password`. Never logged: an error names the file, not its contents.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Efirma } from './descarga-service.ts';

/** The e.firma of `rfc` in `dir`, or undefined when its certificate file is not there. */
export function efirmaFiles(dir: string, rfc: string): Efirma | undefined {
  const file = (ext: string) => join(dir, `${rfc.toUpperCase()}.${ext}`);
  if (!existsSync(file('cer'))) return undefined;
  for (const ext of ['key', 'password']) {
    if (!existsSync(file(ext))) throw new Error(`the e.firma of ${rfc} has ${file('cer')} but no ${file(ext)}`);
  }
  return {
    cer: readFileSync(file('cer')),
    key: readFileSync(file('key')),
    password: readFileSync(file('password'), 'utf8').trim(),
  };
}
