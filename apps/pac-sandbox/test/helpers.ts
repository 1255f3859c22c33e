import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { pino } from 'pino';
import {
  freezeComprobante,
  loadCsd,
  PacError,
  type Csd,
  type FrozenCfdi,
  type InvoiceRequestInput,
} from '@timbra/cfdi-core';
import { Sandbox, type SandboxOptions } from '../src/sandbox.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const SAT_DIR = process.env.SAT_DIR ?? resolve(here, '../../../../shared/sat');

export function testCsd(rfc: 'EKU9003173C9' | 'CACX7605101P8'): {
  csd: Csd;
  cer: Buffer;
  key: Buffer;
  password: string;
} {
  const cer = readFileSync(join(SAT_DIR, 'csd', `${rfc}.cer`));
  const key = readFileSync(join(SAT_DIR, 'csd', `${rfc}.key`));
  const password = readFileSync(join(SAT_DIR, 'csd', `${rfc}.password.txt`), 'utf8');
  return { csd: loadCsd(cer, key, password), cer, key, password };
}

export const emisor = testCsd('EKU9003173C9');
export const pacCsd = testCsd('CACX7605101P8').csd;
export const ADMIN_TOKEN = 'test-admin-token';
export const SW = { user: 'timbra', password: 'timbra-sandbox' };
export const FINKOK = { username: 'timbra@example.com', password: 'timbra-sandbox' };

export interface RunningSandbox {
  sandbox: Sandbox;
  url: (instance?: string) => string;
  adminUrl: string;
  admin: (path: string, body?: unknown, instance?: string) => Promise<unknown>;
  stop: () => Promise<void>;
}

/** A sandbox with `primary` and `backup` on free ports, admin API on. */
export async function startSandbox(overrides: Partial<SandboxOptions> = {}): Promise<RunningSandbox> {
  const sandbox = new Sandbox({
    host: '127.0.0.1',
    instancePorts: { primary: 0, backup: 0 },
    adminPort: 0,
    adminToken: ADMIN_TOKEN,
    sw: SW,
    finkok: FINKOK,
    pacCsd,
    rfcProvCertif: 'SPR190613I52',
    tokenTtlMs: 7_200_000,
    policy: { acceptanceAbove: 5000, acceptDelayMs: 300 },
    seed: 7,
    logger: pino({ level: 'silent' }),
    ...overrides,
  });
  const ports = await sandbox.start();
  const adminUrl = `http://127.0.0.1:${ports.admin}`;
  return {
    sandbox,
    url: (instance = 'primary') => sandbox.url(instance),
    adminUrl,
    admin: (path, body, instance = 'primary') =>
      (body === undefined
        ? got.get(`${adminUrl}/__admin/${path}`, {
            searchParams: { instance },
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
        : got.post(`${adminUrl}/__admin/${path}`, {
            json: { instance, ...(body as object) },
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
      ).json(),
    stop: () => sandbox.stop(),
  };
}

let sequence = 0;

/** A frozen Ingreso issued a minute ago (PACs refuse documents older than 72 hours). */
export function freshInvoice(overrides: Partial<InvoiceRequestInput> = {}): FrozenCfdi {
  sequence++;
  return freezeComprobante(
    {
      tipoDeComprobante: 'I',
      sourceId: `pi_test_${process.pid}_${sequence}_${Math.random()}`,
      occurredAt: new Date(Date.now() - 60_000).toISOString(),
      serie: 'T',
      folio: String(sequence),
      lugarExpedicion: '42501',
      formaPago: '04',
      metodoPago: 'PUE',
      emisor: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601' },
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        domicilioFiscalReceptor: '36257',
        regimenFiscalReceptor: '612',
        usoCFDI: 'G03',
      },
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
    },
    emisor.csd,
  );
}

export interface Ledger {
  stamps: { uuid: string; cadenaHash: string; instance: string; customid?: string }[];
  duplicates: { cadenaHash: string; uuids: string[] }[];
  counts: Record<string, Record<string, number>>;
  received: { instance: string; customid?: string; xmlSha256: string; outcome: string }[];
}

/** Awaits a promise expected to fail with a PacError and returns it. */
export async function pacFailure(promise: Promise<unknown>): Promise<PacError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PacError) return error;
    throw error;
  }
  throw new Error('expected a PacError');
}
