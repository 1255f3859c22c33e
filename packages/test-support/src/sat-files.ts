/**
 * The SAT reference files (XSLTs, schemas, test CSDs, a real stamped CFDI, catálogos), kept in the
 * repository at `sat/` (verbatim SAT public files; see sat/README.md), or `$SAT_DIR`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCsd, type Csd } from '@timbra/cfdi-core';
import { requireClockMark } from './clock-mark.ts';
import { reissueCertificate, stableTempFile } from './test-ca.ts';

/** The SAT reference files: `$SAT_DIR`, or the repository's `sat/`. */
export const SAT_DIR = process.env.SAT_DIR ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../../sat');

if (!existsSync(join(SAT_DIR, 'csd'))) throw new Error(`SAT files not found at ${SAT_DIR}; set SAT_DIR`);

/** The SAT's XSLTs: the oracles for the cadenas originales. */
export const CFDI_XSLT = join(SAT_DIR, 'cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt');
export const TFD_XSLT = join(SAT_DIR, 'cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt');

export type TestRfc = 'EKU9003173C9' | 'CACX7605101P8';

/**
 * The bytes and password of a SAT test CSD as the tests use it: the SAT's key and password, its
 * certificate re-issued by the tests' own CA (test-ca.ts) — same NoCertificado and RFC, valid until
 * 2099 — so no test depends on the SAT's certificate still being valid today.
 */
export function testCsdFiles(rfc: TestRfc): { cer: Buffer; key: Buffer; password: string } {
  const sat = satFiles(rfc);
  return { ...sat, cer: reissueCertificate(sat.cer) };
}

/**
 * The SAT's own test CSD, as published (valid until May 2027): for the tests about the real files,
 * which must carry the `@clock` tag (clock-mark.ts).
 */
export function satTestCsdFiles(rfc: TestRfc): { cer: Buffer; key: Buffer; password: string } {
  requireClockMark(`the SAT's own test certificate ${rfc}.cer (valid until 2027-05-18)`);
  return satFiles(rfc);
}

/** The SAT's own test certificate's path (a `@clock` test's, as satTestCsdFiles). */
export function satTestCertificatePath(rfc: TestRfc): string {
  requireClockMark(`the SAT's own test certificate ${rfc}.cer (valid until 2027-05-18)`);
  return join(SAT_DIR, 'csd', `${rfc}.cer`);
}

function satFiles(rfc: TestRfc): { cer: Buffer; key: Buffer; password: string } {
  return {
    cer: readFileSync(join(SAT_DIR, 'csd', `${rfc}.cer`)),
    key: readFileSync(join(SAT_DIR, 'csd', `${rfc}.key`)),
    password: readFileSync(join(SAT_DIR, 'csd', `${rfc}.password.txt`), 'utf8'),
  };
}

/**
 * A test CSD as files, for processes configured by path (CSD_CER_PATH, CSD_KEY_PATH,
 * CSD_PASSWORD_FILE): the re-issued certificate written to a temporary file, the SAT's key and password.
 */
export function testCsdPaths(rfc: TestRfc): { cer: string; key: string; passwordFile: string } {
  return {
    cer: stableTempFile(`${rfc}.cer`, testCsdFiles(rfc).cer),
    key: join(SAT_DIR, 'csd', `${rfc}.key`),
    passwordFile: join(SAT_DIR, 'csd', `${rfc}.password.txt`),
  };
}

/** A SAT test CSD, loaded. */
export function loadTestCsd(rfc: TestRfc): Csd {
  const { cer, key, password } = testCsdFiles(rfc);
  return loadCsd(cer, key, password);
}

/** The SAT test emisor (persona moral) and receptor (persona física) as invoice-request parties. */
export const TEST_EMISOR = { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601' } as const;
export const TEST_RECEPTOR = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  domicilioFiscalReceptor: '36257',
  regimenFiscalReceptor: '612',
  usoCFDI: 'G03',
} as const;
