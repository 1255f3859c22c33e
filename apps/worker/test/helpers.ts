import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { Redis } from 'ioredis';
import { SwClient } from '@timbra/cfdi-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { pino } from 'pino';
import {
  eventually,
  freePort,
  freePorts,
  freezeSample,
  loadTestCsd,
  testCaFile,
  testCsdFiles,
  testCsdPaths,
  tsEntryArgs,
} from '@timbra/test-support';
import type { PrismaClient } from '@timbra/db';
import { insertInvoices } from '@timbra/db/invoices';
import type { RedisConnection } from '@timbra/db/redis';
import { createWorker, type WorkerDeps } from '../src/create-worker.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import { runOps as runOpsInProcess } from '../src/ops/program.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const ADMIN_TOKEN = 'worker-test-admin-token';
export { eventually, freePort, freePorts };

export interface SandboxProcess {
  /** The sandbox process's pid (a benchmark reads its CPU). */
  pid: number | undefined;
  primary: string;
  backup: string;
  adminUrl: string;
  admin: (path: string, body?: unknown) => Promise<unknown>;
  stop: () => Promise<void>;
}

/**
 * The PAC sandbox as a real process (apps never import each other: it is started, not imported). A
 * free port can be taken by another process between the choice and the listen: a sandbox that exits
 * before it answers is started again on other ports (three tries).
 */
export async function startSandboxProcess(
  options: { validation?: 'on' | 'rules' | 'off' } = {},
): Promise<SandboxProcess> {
  for (let attempt = 1; ; attempt++) {
    const started = await trySandboxProcess(options.validation ?? 'on');
    if (started) return started;
    if (attempt >= 3) throw new Error('sandbox did not start');
  }
}

async function trySandboxProcess(validation: 'on' | 'rules' | 'off'): Promise<SandboxProcess | undefined> {
  const [primary, backup, admin] = (await freePorts(3)) as [number, number, number];
  const child: ChildProcess = spawn(process.execPath, tsEntryArgs(resolve(here, '../../pac-sandbox/src/main.ts')), {
    env: {
      ...process.env,
      SANDBOX_PRIMARY_PORT: String(primary),
      SANDBOX_BACKUP_PORT: String(backup),
      SANDBOX_ADMIN_PORT: String(admin),
      SANDBOX_ADMIN_TOKEN: ADMIN_TOKEN,
      // The tests' CSDs are re-issued by their own CA (valid until 2099): the sandbox trusts it.
      SANDBOX_TRUSTED_CA_FILE: testCaFile(),
      SANDBOX_CANCEL_ACCEPT_DELAY_MS: '500',
      SANDBOX_VALIDATION: validation,
      LOG_LEVEL: 'error',
      NODE_OPTIONS: '',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited = false;
  child.once('exit', () => (exited = true));
  const adminUrl = `http://127.0.0.1:${admin}/__admin`;
  for (let i = 0; ; i++) {
    try {
      await got.get(`http://127.0.0.1:${primary}/healthz`, { retry: { limit: 0 } });
      break;
    } catch {
      if (exited) return undefined;
      if (i > 300) {
        child.kill('SIGKILL');
        throw new Error('sandbox did not start');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    pid: child.pid,
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

/**
 * One throwaway stamp on each sandbox instance, with time to spare. Its first stamp is its slowest
 * (a cold process: ~0.3 s idle, past the workers' 1.5 s response timeout once while another process
 * took both cores), so each test's first call is then as fast as the rest. Ledger checks go by each
 * test's own stamp keys.
 */
export async function warmSandbox(sandbox: SandboxProcess): Promise<void> {
  for (const client of swClients(sandbox, { connectMs: 10_000, responseMs: 30_000 }))
    await client.stamp(freezeSample({ sourceId: `warm-up-${randomUUID()}` }).xml, { idempotencyKey: randomUUID() });
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

/**
 * The tests' emisor, written once: every tenant row belongs to an organization, and while the
 * database holds exactly one, rows the tests write as its owner default to it.
 */
export async function testEmisor(prisma: PrismaClient): Promise<{ id: string }> {
  return prisma.emisor.upsert({
    where: { rfc: 'EKU9003173C9' },
    create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    update: {},
  });
}

/** An organization as the tests make it: its emisor row's facts. */
export interface TestOrganization {
  id: string;
  rfc: 'EKU9003173C9' | 'CACX7605101P8';
  nombre: string;
  regimenFiscal: string;
  cp: string;
}

let organizationFolio = 0;
/**
 * A pending Ingreso of `org` (serie W), frozen with its own CSD, written on `prisma` — its own
 * client — as the API writes it (the invoice and its outbox row). Returns the invoice's id.
 */
export async function pendingInvoiceOf(prisma: PrismaClient, org: TestOrganization): Promise<string> {
  const n = ++organizationFolio;
  const frozen = freezeSample(
    {
      sourceId: `org-${n}-${Date.now()}`,
      serie: 'W',
      folio: String(n),
      lugarExpedicion: org.cp,
      emisor: { rfc: org.rfc, nombre: org.nombre, regimenFiscal: org.regimenFiscal },
    },
    loadTestCsd(org.rfc),
  );
  const [invoiceId] = await prisma.$transaction((tx) =>
    insertInvoices(tx, org.id, [
      {
        kind: 'I',
        serie: 'W',
        folio: n,
        paymentId: null,
        stampKey: frozen.stampKey,
        moneda: 'MXN',
        status: 'pending',
        frozen,
        totals: frozen,
      },
    ]),
  );
  return invoiceId!;
}

/** Writes an emisor (once), an invoice with a frozen CFDI issued a minute ago, and its pending outbox row. */
export async function pendingInvoice(
  prisma: PrismaClient,
  tag: string,
  overrides: Parameters<typeof freezeSample>[0] = {},
  options: { paymentId?: string } = {},
): Promise<{ invoiceId: string; outboxId: string; stampKey: string; frozenXml: string }> {
  folio++;
  const emisor = await testEmisor(prisma);
  const frozen = freezeSample({
    sourceId: `${tag}-${folio}-${Date.now()}`,
    serie: 'W',
    folio: String(folio),
    ...overrides,
  });
  // Written the way the API writes it: the invoice, its outbox row and the NOTIFY in one statement.
  const [invoiceId] = await prisma.$transaction((tx) =>
    insertInvoices(tx, emisor.id, [
      {
        kind: 'I',
        serie: 'W',
        folio,
        paymentId: options.paymentId ?? null,
        stampKey: frozen.stampKey,
        moneda: 'MXN',
        status: 'pending',
        frozen,
        totals: frozen,
      },
    ]),
  );
  const outbox = await prisma.outboxRow.findFirstOrThrow({ where: { invoiceId } });
  return { invoiceId: invoiceId!, outboxId: outbox.id, stampKey: frozen.stampKey, frozenXml: frozen.xml };
}

/**
 * A worker on a queue prefix of its own against the sandbox's PACs, with fast retries and cancel
 * polls and the SAT test CSD: what most tests need; `overrides` for the rest.
 */
export function testWorker(
  deps: { prisma: PrismaClient; redis: RedisConnection; sandbox: SandboxProcess },
  overrides: Partial<WorkerDeps> = {},
  options: { autorun?: boolean } = {},
) {
  return createWorker(
    {
      prisma: deps.prisma,
      redis: deps.redis,
      prefix: `{t${randomBytes(4).toString('hex')}}`,
      chain: new PacChain(swClients(deps.sandbox), { threshold: 3, coolDownMs: 60_000 }),
      retry: { attempts: 6, baseDelayMs: 50, maxDelayMs: 200 },
      concurrency: 4,
      relayBatchSize: 50,
      logger: pino({ level: 'silent' }),
      csd: loadTestCsd('EKU9003173C9'),
      csdCredentials: testCsdFiles('EKU9003173C9'),
      cancelPoll: { baseMs: 100, maxMs: 400 },
      ...overrides,
    },
    options,
  );
}

/**
 * The worker's real entry point as a child process on `databaseUrl`, stamping at `sandbox` with the
 * tests' CSD (re-issued by their CA), health on port 0, quick timers; `env` adds or overrides.
 */
export function startWorkerProcess(
  deps: { databaseUrl: string; sandbox: SandboxProcess },
  prefix: string,
  env: Record<string, string> = {},
  stdio: 'ignore' | 'pipe' = 'ignore',
): ChildProcess {
  const csd = testCsdPaths('EKU9003173C9');
  return spawn(process.execPath, tsEntryArgs(resolve(here, '../src/main.ts')), {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      TIMBRA_PROFILE: 'sandbox',
      CSD_CER_PATH: csd.cer,
      CSD_KEY_PATH: csd.key,
      CSD_PASSWORD_FILE: csd.passwordFile,
      DATABASE_URL: deps.databaseUrl,
      QUEUE_PREFIX: prefix,
      PAC_PRIMARY_URL: deps.sandbox.primary,
      // Port 0: the test must pass while `npm run dev` holds the default port.
      WORKER_HTTP_PORT: '0',
      STAMP_LOCK_MS: '2000',
      RELAY_POLL_MS: '200',
      STAMP_BACKOFF_BASE_MS: '100',
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: ['ignore', stdio, stdio === 'pipe' ? 'pipe' : 'inherit'],
  });
}

/**
 * The API as the real process it is in production (apps never import each other), on a free port. A
 * port found free can be taken by another test process before the API binds it: an API that exits
 * before answering is started again on another port (three tries).
 */
export async function startApiProcess(
  databaseUrl: string,
  apiKey: string,
  /** More settings (the dashboard's, a queue prefix…). */
  env: Record<string, string> = {},
): Promise<{ url: string; stop: () => Promise<void> }> {
  for (let attempt = 1; ; attempt++) {
    const started = await tryApiProcess(databaseUrl, apiKey, env);
    if (started) return started;
    if (attempt >= 3) throw new Error('the API exited before answering, three times');
  }
}

async function tryApiProcess(
  databaseUrl: string,
  apiKey: string,
  env: Record<string, string>,
): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const api: ChildProcess = spawn(process.execPath, tsEntryArgs(resolve(here, '../../api/src/main.ts')), {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      TIMBRA_PROFILE: 'sandbox',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      API_KEYS: `pos:${apiKey}:admin`,
      LOG_LEVEL: 'error',
      // The emisor's CSD as the tests use it: re-issued by their CA (valid until 2099).
      CSD_CER_PATH: testCsdPaths('EKU9003173C9').cer,
      CSD_KEY_PATH: testCsdPaths('EKU9003173C9').key,
      CSD_PASSWORD_FILE: testCsdPaths('EKU9003173C9').passwordFile,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited = false;
  api.once('exit', () => (exited = true));
  await eventually(
    async () =>
      exited ||
      (await got.get(`${url}/healthz`, { retry: { limit: 0 }, throwHttpErrors: false }).catch(() => undefined))
        ?.statusCode === 200,
    20_000,
  );
  if (exited) return undefined;
  return {
    url,
    stop: async () => {
      if (api.exitCode !== null) return;
      api.kill('SIGTERM');
      await new Promise((r) => api.once('exit', r));
    },
  };
}

/**
 * `npm run ops -- …` against a database, as a separate process. Asynchronously: blocking the event
 * loop would leave this process's idle keep-alive sockets to the sandbox unread while it closes them.
 */
export function runOps(databaseUrl: string | undefined, args: string[], env: Record<string, string> = {}) {
  const base: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', ...env };
  if (databaseUrl) base.DATABASE_URL = databaseUrl;
  else delete base.DATABASE_URL;
  return new Promise<{ status: number; stdout: string; stderr: string }>((done) => {
    // Node with tsx's loader, as the apps' test processes start (npx would add a second of its own).
    execFile(
      process.execPath,
      [...tsEntryArgs(resolve(here, '../src/ops/ops-cli.ts')), ...args],
      { env: base, encoding: 'utf8' },
      (error, stdout, stderr) => done({ status: error ? Number(error.code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * `npm run ops -- …` in this process (the CLI's own `runOps`, with its settings and output given):
 * the same parsing, commands and exit codes without a process start (~2 s each). Tests that need the
 * process itself (its start-up without the data layer, several runs at once) use runOps.
 */
export async function opsHere(databaseUrl: string | undefined, args: string[], env: Record<string, string> = {}) {
  const base: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (databaseUrl) base.DATABASE_URL = databaseUrl;
  else delete base.DATABASE_URL;
  let stdout = '';
  let stderr = '';
  const status = await runOpsInProcess(args, {
    env: base,
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
  });
  return { status, stdout, stderr };
}

/** Debian's Chromium (or CHROMIUM_PATH), headless, for the tests that use the product as a person does. */
export async function launchChromium(): Promise<Browser> {
  const path = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(path))
    throw new Error(`no Chromium at ${path}: apt-get install chromium (or set CHROMIUM_PATH); .ci/run installs it`);
  return chromium.launch({
    executablePath: path,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}

/** Where the browser tests keep their screenshots (apps/worker/.artifacts, made if missing). */
export function artifactsDir(): string {
  const dir = resolve(here, '../.artifacts');
  mkdirSync(dir, { recursive: true });
  return dir;
}
