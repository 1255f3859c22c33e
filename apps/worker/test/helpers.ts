import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { Redis } from 'ioredis';
import { freezeComprobante, loadCsd, SwClient } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';

const here = dirname(fileURLToPath(import.meta.url));
const SAT_DIR = process.env.SAT_DIR ?? resolve(here, '../../../../shared/sat');
export const ADMIN_TOKEN = 'worker-test-admin-token';
const csd = loadCsd(
  readFileSync(join(SAT_DIR, 'csd/EKU9003173C9.cer')),
  readFileSync(join(SAT_DIR, 'csd/EKU9003173C9.key')),
  readFileSync(join(SAT_DIR, 'csd/EKU9003173C9.password.txt'), 'utf8'),
);

async function freePort(): Promise<number> {
  return new Promise((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => r(port));
    });
  });
}

export interface SandboxProcess {
  primary: string;
  backup: string;
  adminUrl: string;
  admin: (path: string, body?: unknown) => Promise<unknown>;
  stop: () => Promise<void>;
}

/** The PAC sandbox as a real process (apps never import each other: it is started, not imported). */
export async function startSandboxProcess(): Promise<SandboxProcess> {
  const [primary, backup, admin] = [await freePort(), await freePort(), await freePort()];
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@timbra/source', resolve(here, '../../pac-sandbox/src/main.ts')],
    {
      env: {
        ...process.env,
        SANDBOX_PRIMARY_PORT: String(primary),
        SANDBOX_BACKUP_PORT: String(backup),
        SANDBOX_ADMIN_PORT: String(admin),
        SANDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
        LOG_LEVEL: 'error',
        NODE_OPTIONS: '',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const adminUrl = `http://127.0.0.1:${admin}/__admin`;
  for (let i = 0; ; i++) {
    try {
      await got.get(`http://127.0.0.1:${primary}/healthz`, { retry: { limit: 0 } });
      break;
    } catch {
      if (i > 150) throw new Error('sandbox did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    primary: `http://127.0.0.1:${primary}`,
    backup: `http://127.0.0.1:${backup}`,
    adminUrl: `http://127.0.0.1:${admin}`,
    admin: (path, body) =>
      (body === undefined
        ? got.get(`${adminUrl}/${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, retry: { limit: 0 } })
        : got.post(`${adminUrl}/${path}`, {
            json: body,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            retry: { limit: 0 },
          })
      ).json(),
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

export function swClients(sandbox: SandboxProcess, timeouts = { connectMs: 500, responseMs: 1_500 }) {
  const make = (name: 'primary' | 'backup') =>
    new SwClient({
      name,
      baseUrl: sandbox[name],
      user: 'timbra',
      password: 'timbra-sandbox',
      satStatusUrl: `${sandbox[name]}/ConsultaCFDIService.svc`,
      timeouts,
    });
  return [make('primary'), make('backup')];
}

export function redisFor(): Redis {
  return new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
}

let folio = 0;

/** Writes an emisor (once), an invoice with a frozen CFDI issued a minute ago, and its pending outbox row. */
export async function pendingInvoice(
  prisma: PrismaClient,
  tag: string,
): Promise<{ invoiceId: string; outboxId: string; stampKey: string; frozenXml: string }> {
  folio++;
  const emisor = await prisma.emisor.upsert({
    where: { rfc: 'EKU9003173C9' },
    create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    update: {},
  });
  const frozen = freezeComprobante(
    {
      tipoDeComprobante: 'I',
      sourceId: `${tag}-${folio}-${Date.now()}`,
      occurredAt: new Date(Date.now() - 60_000).toISOString(),
      serie: 'W',
      folio: String(folio),
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
          claveProdServ: '01010101',
          cantidad: '1',
          claveUnidad: 'ACT',
          descripcion: `Venta ${tag}`,
          valorUnitario: '100.00',
          objetoImp: '02',
          traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
        },
      ],
    },
    csd,
  );
  const invoice = await prisma.invoice.create({
    data: {
      emisorId: emisor.id,
      kind: 'I',
      serie: 'W',
      folio,
      fecha: frozen.fecha,
      moneda: 'MXN',
      subTotal: frozen.subTotal,
      total: frozen.total,
      status: 'pending',
      stampKey: frozen.stampKey,
      frozenXml: frozen.xml,
      cadenaOriginal: frozen.cadenaOriginal,
    },
  });
  const outbox = await prisma.outboxRow.create({
    data: { kind: 'stamp', invoiceId: invoice.id, stampKey: frozen.stampKey },
  });
  return { invoiceId: invoice.id, outboxId: outbox.id, stampKey: frozen.stampKey, frozenXml: frozen.xml };
}

/** Waits until `check` is true (polling), or fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
