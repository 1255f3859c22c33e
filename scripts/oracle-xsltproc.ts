/**
 * `npm run oracle:xsltproc` — a second, independent oracle where libxslt's `xsltproc` is installed
 * (CI runs it when present; the tests never need it): the SAT's XSLT run by xsltproc must give, byte
 * for byte, the cadena original of the SAT's real stamped CFDI and of documents Timbra freezes — the
 * same answer the tests get from SaxonJS. Exits 1 on any difference.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseStampedCfdi } from '@timbra/cfdi-core';
import { CFDI_XSLT, freezeSample, SAT_DIR, satXslt, withConcepto } from '@timbra/test-support';

const real = readFileSync(join(SAT_DIR, 'samples/cfdi40-real.xml'), 'utf8');
const documents = [
  { name: 'the SAT sample', xml: real, cadena: parseStampedCfdi(real).cadenaOriginal },
  ...[freezeSample(), freezeSample(withConcepto('9000.00')), freezeSample({ formaPago: '99', metodoPago: 'PPD' })].map(
    (f, i) => ({ name: `frozen document ${i + 1}`, xml: f.xml, cadena: f.cadenaOriginal }),
  ),
];
const dir = mkdtempSync(join(tmpdir(), 'timbra-xsltproc-'));
let failed = 0;
try {
  for (const doc of documents) {
    const file = join(dir, 'doc.xml');
    writeFileSync(file, doc.xml);
    // xsltproc warns on stderr that the SAT files declare XSLT 2.0; it still runs them as 1.0.
    const byXsltproc = execFileSync('xsltproc', [CFDI_XSLT, file], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const bySaxon = satXslt(CFDI_XSLT, [doc.xml]);
    const ok = byXsltproc === doc.cadena && bySaxon === doc.cadena;
    if (!ok) failed++;
    process.stdout.write(
      `${ok ? 'ok  ' : 'DIFF'} ${doc.name}: xsltproc, SaxonJS and Timbra ${ok ? 'agree' : 'disagree'}\n`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = failed > 0 ? 1 : 0;
