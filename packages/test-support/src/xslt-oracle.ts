// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- saxon-js ships no types; this declares the part used, for every workspace that compiles this file
/// <reference path="./saxon-js.d.ts" />
/**
 * The SAT's XSLT run by SaxonJS (a conformant XSLT 3.0 processor from npm): the oracle every cadena
 * original Timbra computes is compared with, byte for byte. The SAT stylesheets declare XSLT 2.0;
 * SaxonJS runs them as written (xsltproc, where installed, only runs them in 1.0 forwards-compatible
 * mode — it agrees on every document Timbra makes, and CI may run it as a second oracle).
 *
 * SaxonJS runs compiled stylesheets (SEF). The SAT stylesheet with its includes compiles in ~10 s with
 * `xslt3` (also from npm), so the SEF is cached in `node_modules/.cache/timbra-sef/`, keyed by a hash
 * of every XSLT under the SAT folder: compiled once per machine, again only when a SAT file changes.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import SaxonJS from 'saxon-js';
import { SAT_DIR } from './sat-files.ts';

const require = createRequire(import.meta.url);
const CACHE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../node_modules/.cache/timbra-sef');

function xsltFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return xsltFiles(path);
    return name.endsWith('.xslt') ? [path] : [];
  });
}

let satHash: string | undefined;
function hashOfSatXslts(): string {
  if (satHash) return satHash;
  const hash = createHash('sha256');
  for (const file of xsltFiles(join(SAT_DIR, 'cfd')).sort())
    hash.update(file.slice(SAT_DIR.length)).update(readFileSync(file));
  satHash = hash.digest('hex').slice(0, 16);
  return satHash;
}

/** The compiled form of `xslt`, from the cache or compiled now (atomically written: parallel test files). */
function compiled(xslt: string): string {
  const sef = join(CACHE_DIR, `${basename(xslt, '.xslt')}-${hashOfSatXslts()}.sef.json`);
  if (existsSync(sef)) return sef;
  mkdirSync(CACHE_DIR, { recursive: true });
  const partial = `${sef}.${process.pid}.partial`;
  const run = spawnSync(
    process.execPath,
    [require.resolve('xslt3/xslt3.js'), `-xsl:${xslt}`, `-export:${partial}`, '-nogo'],
    {
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`xslt3 could not compile ${xslt}: ${run.stderr || run.stdout}`);
  renameSync(partial, sef);
  return sef;
}

const stylesheets = new Map<string, unknown>();

function stylesheetOf(xslt: string): unknown {
  let stylesheet = stylesheets.get(xslt);
  if (!stylesheet) {
    stylesheet = JSON.parse(readFileSync(compiled(xslt), 'utf8')) as unknown;
    stylesheets.set(xslt, stylesheet);
  }
  return stylesheet;
}

/**
 * Compiles (first time on a machine: ~10 s, blocking) and loads SAT XSLTs now. Call it in `beforeAll`
 * before starting servers: a 10-second block in the middle of a test outlives the servers' keep-alive
 * timeout, and the next request on a reused socket is reset (ECONNRESET).
 */
export function prepareSatXslt(...xslts: string[]): void {
  for (const xslt of xslts) stylesheetOf(xslt);
}

/**
 * Runs a SAT XSLT (`CFDI_XSLT`, `TFD_XSLT`) over each document and returns the outputs concatenated
 * (compare with the concatenation of Timbra's own results).
 */
export function satXslt(xslt: string, xmlDocuments: readonly string[]): string {
  const stylesheet = stylesheetOf(xslt);
  return xmlDocuments
    .map(
      (sourceText) =>
        SaxonJS.transform({ stylesheetInternal: stylesheet, sourceText, destination: 'serialized' }, 'sync')
          .principalResult,
    )
    .join('');
}
