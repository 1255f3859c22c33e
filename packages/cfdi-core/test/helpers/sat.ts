import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAT_DIR } from '../../src/testing.ts';

const here = dirname(fileURLToPath(import.meta.url));

export { SAT_DIR, loadTestCsd, testCsdFiles as csdBytes, type TestRfc } from '../../src/testing.ts';
export const CFDI_XSLT = join(SAT_DIR, 'cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt');
export const TFD_XSLT = join(SAT_DIR, 'cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt');

/**
 * Runs an XSLT with xsltproc over several documents in one invocation. The outputs come back
 * concatenated; the caller compares against the concatenation of its own results.
 */
export function xsltproc(xslt: string, xmlDocuments: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-xslt-'));
  try {
    const files = xmlDocuments.map((xml, i) => {
      const file = join(dir, `${i}.xml`);
      writeFileSync(file, xml);
      return file;
    });
    // xsltproc warns on stderr that the SAT files declare XSLT 2.0; it still runs them as 1.0.
    return execFileSync('xsltproc', [xslt, ...files], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 256 * 1024 * 1024,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A copy of the SAT schemas with a stand-in for catCFDI.xsd (not shipped: several MiB) and a wrapper
 * schema that imports CFDI 4.0, Pagos 2.0 and TFD 1.1 so `xs:any` in Complemento is validated strictly.
 */
export class SchemaValidator {
  private readonly dir: string;
  private readonly wrapper: string;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'timbra-xsd-'));
    for (const sub of ['4', 'tipoDatos', 'Pagos', 'TimbreFiscalDigital', 'catalogos/Pagos']) {
      cpSync(join(SAT_DIR, 'cfd', sub), join(this.dir, 'cfd', sub), { recursive: true });
    }
    cpSync(join(here, '../xsd/catCFDI.xsd'), join(this.dir, 'cfd/catalogos/catCFDI.xsd'));
    this.wrapper = join(this.dir, 'all.xsd');
    writeFileSync(
      this.wrapper,
      `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:timbra:all" elementFormDefault="qualified">
  <xs:import namespace="http://www.sat.gob.mx/cfd/4" schemaLocation="cfd/4/cfdv40.xsd"/>
  <xs:import namespace="http://www.sat.gob.mx/Pagos20" schemaLocation="cfd/Pagos/Pagos20.xsd"/>
  <xs:import namespace="http://www.sat.gob.mx/TimbreFiscalDigital" schemaLocation="cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd"/>
</xs:schema>
`,
    );
  }

  /** Validates documents with xmllint; returns the error output for each invalid one (empty = all valid). */
  validate(xmlDocuments: readonly string[]): { index: number; errors: string }[] {
    const files = xmlDocuments.map((xml, i) => {
      const file = join(this.dir, `doc-${i}.xml`);
      writeFileSync(file, xml);
      return file;
    });
    const run = spawnSync('xmllint', ['--noout', '--nonet', '--schema', this.wrapper, ...files], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (run.error) throw run.error;
    if (run.status === 0) return [];
    return files
      .map((file, index) => ({
        index,
        errors: run.stderr
          .split('\n')
          .filter((l) => l.startsWith(file) && !l.endsWith(' validates'))
          .join('\n'),
      }))
      .filter((r) => r.errors.length > 0);
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
