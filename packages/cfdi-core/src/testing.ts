/**
 * Test and benchmark support shared by every workspace (exported as `@timbra/cfdi-core/testing`, not
 * part of the runtime API): the SAT reference files, the SAT test CSDs, a typical invoice request,
 * free ports and polling. One place, so every suite builds its fixtures the same way.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createSign, createVerify } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCsd, type Csd } from './csd/csd.ts';
import { freezeComprobante, type FrozenCfdi } from './freeze.ts';
import type { InvoiceRequestInput } from './validate/request-schema.ts';

/** The SAT reference files: `$SAT_DIR`, or `shared/sat` beside the repository. */
export const SAT_DIR =
  process.env.SAT_DIR ?? resolve(dirname(fileURLToPath(import.meta.url)), '../../../../shared/sat');

if (!existsSync(join(SAT_DIR, 'csd'))) throw new Error(`SAT files not found at ${SAT_DIR}; set SAT_DIR`);

const here = dirname(fileURLToPath(import.meta.url));
/** The SAT's XSLTs: the oracles for the cadenas originales (run by xsltproc). */
export const CFDI_XSLT = join(SAT_DIR, 'cfd/4/cadenaoriginal_4_0/cadenaoriginal_4_0.xslt');
export const TFD_XSLT = join(SAT_DIR, 'cfd/TimbreFiscalDigital/cadenaoriginal_TFD_1_1.xslt');

export type TestRfc = 'EKU9003173C9' | 'CACX7605101P8';

/** The bytes and password of a SAT test CSD. */
export function testCsdFiles(rfc: TestRfc): { cer: Buffer; key: Buffer; password: string } {
  return {
    cer: readFileSync(join(SAT_DIR, 'csd', `${rfc}.cer`)),
    key: readFileSync(join(SAT_DIR, 'csd', `${rfc}.key`)),
    password: readFileSync(join(SAT_DIR, 'csd', `${rfc}.password.txt`), 'utf8'),
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

let sequence = 0;

/**
 * A one-concepto Ingreso to the test receptor issued a minute ago (PACs refuse documents older than
 * 72 hours), with a unique source id and folio unless overridden.
 */
export function sampleIngreso(overrides: Partial<InvoiceRequestInput> = {}): InvoiceRequestInput {
  sequence++;
  return {
    tipoDeComprobante: 'I',
    sourceId: `sample_${process.pid}_${sequence}_${Date.now()}`,
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
    serie: 'T',
    folio: String(sequence),
    lugarExpedicion: '42501',
    formaPago: '04',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR },
    conceptos: [
      {
        claveProdServ: '86121503',
        cantidad: '1',
        claveUnidad: 'E48',
        descripcion: `Colegiatura ${sequence}`,
        valorUnitario: `${1000 + sequence}.00`,
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
    ...overrides,
  };
}

/**
 * Overrides for `sampleIngreso` with one concepto of `valorUnitario` (+ 16% IVA): e.g. '9000.00' for
 * a Total of 10 440.00, above the SAT's threshold where cancelling needs the receptor's acceptance.
 */
export function withConcepto(valorUnitario: string): Partial<InvoiceRequestInput> {
  return {
    conceptos: [
      {
        claveProdServ: '86121503',
        cantidad: '1',
        claveUnidad: 'E48',
        descripcion: 'Inscripción',
        valorUnitario,
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      },
    ],
  };
}

/** `sampleIngreso` frozen with the test emisor's CSD. */
export function freezeSample(overrides: Partial<InvoiceRequestInput> = {}, csd: Csd = defaultCsd()): FrozenCfdi {
  return freezeComprobante(sampleIngreso(overrides), csd);
}

let emisorCsd: Csd | undefined;
function defaultCsd(): Csd {
  emisorCsd ??= loadTestCsd('EKU9003173C9');
  return emisorCsd;
}

/** A TCP port free on the loopback right now. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** Polls `check` every 50 ms until it is true; fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The environment variables a Markdown document lists under `heading`: every backticked
 * UPPER_CASE name in the first column of the tables up to the next heading of the same or a
 * higher level. For tests that keep configuration docs and config schemas in step.
 */
export function documentedVariables(markdownFile: string, heading: string): Set<string> {
  const lines = readFileSync(markdownFile, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`${markdownFile}: no heading "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 1;
  const names = new Set<string>();
  for (const line of lines.slice(start + 1)) {
    const h = /^(#+) /.exec(line);
    if (h && h[1]!.length <= level) break;
    const firstCell = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

/**
 * RSA-2048 operations a stamp cannot avoid — verify the emisor's Sello, sign the TFD — per second on
 * one core, measured for `seconds`: the raw reference of the sandbox and end-to-end benchmarks.
 */
export function rawVerifySignRate(seconds = 2): number {
  const sample = freezeSample();
  const emisor = defaultCsd();
  const pac = loadTestCsd('CACX7605101P8');
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(seconds * 1e9));
  let ops = 0;
  while (process.hrtime.bigint() - start < budget) {
    createVerify('RSA-SHA256')
      .update(sample.cadenaOriginal, 'utf8')
      .verify(emisor.certificate.publicKey, sample.sello, 'base64');
    createSign('RSA-SHA256').update(sample.cadenaOriginal, 'utf8').sign(pac.privateKey, 'base64');
    ops++;
  }
  return ops / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** `redis-server` arguments for a private, throwaway Redis on `port`: loopback only, no persistence. */
export function privateRedisArgs(port: number, maxmemoryPolicy = 'noeviction'): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1'],
    ...['--save', '', '--appendonly', 'no', '--maxmemory-policy', maxmemoryPolicy],
  ];
}

/**
 * User + system CPU ms (Linux /proc) of one process, or summed over every process whose command
 * name is `comm` (all of Postgres's backends, say). A process that is gone counts 0; for the
 * benchmarks' "where did the cores go" lines.
 */
export function cpuMs(filter: { pid: number | undefined } | { comm: string }): number {
  const pids = 'pid' in filter ? [String(filter.pid)] : readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if ('comm' in filter && stat.slice(stat.indexOf('(') + 1, close) !== filter.comm) continue;
      const fields = stat.slice(close + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

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
    cpSync(join(here, '../test/xsd/catCFDI.xsd'), join(this.dir, 'cfd/catalogos/catCFDI.xsd'));
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
