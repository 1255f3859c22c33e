/**
 * `npm run bench:freeze [-- --seconds S] [-- --docs N]` — freezing throughput against its floors,
 * measured in one run on the same machine:
 *   - documents frozen per second (a typical 3-concepto invoice: validate, compute, build, cadena, sign, serialise);
 *   - cadenas per second (parse the frozen XML + cadena, and the cadena alone from the tree);
 *   - the raw RSA-2048 PKCS#1 v1.5 SHA-256 sign rate of node:crypto (the floor freezing cannot beat);
 *   - the SAT XSLT's cadena rate on the same documents (SaxonJS, in this process, warmed up).
 * Targets: freezing ≥ 50% of the raw sign rate; the TypeScript cadena ≥ 20× the SAT XSLT per document.
 */
import { createSign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { prepareComprobante } from '../src/freeze.ts';
import { cadenaOriginal, freezeComprobante, parseXml, type InvoiceRequestInput } from '../src/index.ts';
import { CFDI_XSLT, loadTestCsd, satXslt } from '@timbra/test-support';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '3' }, docs: { type: 'string', default: '2000' } },
});
const seconds = Number(values.seconds);
const docCount = Number(values.docs);

const here = dirname(fileURLToPath(import.meta.url));
const csd = loadTestCsd('EKU9003173C9');
const template = JSON.parse(
  readFileSync(join(here, '../test/fixtures/ingreso-request.json'), 'utf8'),
) as InvoiceRequestInput;
const requestFor = (i: number): InvoiceRequestInput => ({
  ...template,
  sourceId: `pi_bench_${i}`,
  folio: String(i + 1),
});

/** Runs `fn` repeatedly for about `forSeconds` (after a short warm-up) and returns operations per second. */
function rate(forSeconds: number, fn: (i: number) => void): number {
  // Warm up for a fixed share of the time so the JIT has optimised the code being measured.
  const warmUntil = process.hrtime.bigint() + BigInt(Math.round(forSeconds * 0.25 * 1e9));
  for (let i = 0; process.hrtime.bigint() < warmUntil; i++) fn(i);
  let n = 0;
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(forSeconds * 1e9));
  let elapsed = 0n;
  while (elapsed < budget) {
    for (let k = 0; k < 50; k++) fn(n++);
    elapsed = process.hrtime.bigint() - start;
  }
  return n / (Number(elapsed) / 1e9);
}

const docs = Array.from({ length: docCount }, (_, i) => freezeComprobante(requestFor(i), csd));
const cadenaLength = docs[0]!.cadenaOriginal.length;

const freezeRate = rate(seconds, (i) => freezeComprobante(requestFor(i), csd));
const signRate = rate(seconds, (i) =>
  createSign('RSA-SHA256')
    .update(docs[i % docs.length]!.cadenaOriginal, 'utf8')
    .sign(csd.privateKey, 'base64'),
);
const parseCadenaRate = rate(seconds, (i) => cadenaOriginal(parseXml(docs[i % docs.length]!.xml)));
const treeCadenaRate = cadenaOnlyRate(seconds);

/**
 * The cadena as freezing computes it: over the tree the builder just made (in cache, attribute names
 * interned), timing only the cadena. Each iteration prepares another invoice untimed.
 */
function cadenaOnlyRate(forSeconds: number): number {
  let timed = 0n;
  let n = 0;
  const budget = BigInt(Math.round(forSeconds * 1e9));
  for (let i = 0; i < 2000; i++) cadenaOriginal(prepareComprobante(requestFor(i), csd).tree);
  while (timed < budget) {
    const { tree } = prepareComprobante(requestFor(n), csd);
    const start = process.hrtime.bigint();
    cadenaOriginal(tree);
    timed += process.hrtime.bigint() - start;
    n++;
  }
  return n / (Number(timed) / 1e9);
}

// The reference: the SAT's XSLT run by SaxonJS, in this process (compiled stylesheet loaded and
// warmed up first, so the figure is the per-document rate).
satXslt(
  CFDI_XSLT,
  docs.slice(0, 5).map((d) => d.xml),
);
const xsltStart = process.hrtime.bigint();
const xsltOut = satXslt(
  CFDI_XSLT,
  docs.map((d) => d.xml),
);
const xsltRate = docs.length / (Number(process.hrtime.bigint() - xsltStart) / 1e9);
if (xsltOut !== docs.map((d) => d.cadenaOriginal).join('')) throw new Error('the SAT XSLT and cadenaOriginal disagree');

const fmt = (n: number) => n.toFixed(0).padStart(9);
const freezeShare = freezeRate / signRate;
const speedup = treeCadenaRate / xsltRate;
const lines = [
  `bench:freeze — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
  `documents: typical 3-concepto Ingreso, cadena ${cadenaLength} chars, ${docCount} documents for the SAT XSLT`,
  '',
  `  freeze (validate+build+cadena+sign+serialise) ${fmt(freezeRate)} docs/s`,
  `  raw RSA-2048 SHA-256 sign (node:crypto)        ${fmt(signRate)} signs/s   ← floor`,
  `  cadena: parse XML + cadena (TypeScript)        ${fmt(parseCadenaRate)} docs/s`,
  `  cadena: from a just-built tree (TypeScript)    ${fmt(treeCadenaRate)} docs/s   (what freezing runs)`,
  `  cadena: SAT XSLT (SaxonJS), ${docCount} docs      ${fmt(xsltRate)} docs/s   ← reference`,
  '',
  `  freeze / raw sign   = ${(freezeShare * 100).toFixed(1)}%   (target ≥ 50%)  ${freezeShare >= 0.5 ? 'OK' : 'MISSED'}`,
  `  TS cadena / SAT XSLT = ${speedup.toFixed(1)}×     (target ≥ 20×)  ${speedup >= 20 ? 'OK' : 'MISSED'}`,
  `  parse+cadena / SAT XSLT = ${(parseCadenaRate / xsltRate).toFixed(1)}× (both parse the XML text; the parse dominates)`,
];
process.stdout.write(`${lines.join('\n')}\n`);
