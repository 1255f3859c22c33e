/**
 * `npm run bench:fairness [-- --backlog N --share S --concurrency C --reference-timeout SECONDS --window SECONDS]` —
 * one organization's backlog of N payments (default 50,000) and, once it is being stamped, another
 * organization's single payment: how long that payment waits to be stamped. Run twice in the same
 * process: with each organization's share of the stamp queue (RELAY_MAX_ENQUEUED_PER_ORGANIZATION, S,
 * default 200), and, as the reference, without one (the single payment queued behind the whole
 * backlog; given up after the reference timeout, default 60 s). Also the backlog's stamping rate in
 * each, over the window from the single payment's commit (default 10 s), so a share that slowed
 * everyone down would show. Target: the single payment stamped within
 * 5 s of its commit, behind a backlog of 50,000.
 *
 * The worker as `npm start` runs it (relay loop on NOTIFY and polls, stamp worker, every
 * organization on its own client from one pool) against the PAC sandbox in its own process.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { freezeComprobante, type Csd, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { insertInvoices } from '@timbra/db/invoices';
import { OrganizationClients, organizationIds, pendingOrganizations } from '@timbra/db/organizations';
import { createTestDatabase } from '@timbra/db/testing';
import { loadTestCsd, sampleIngreso } from '@timbra/test-support';
import { createWorker } from '../src/create-worker.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import { runRelay } from '../src/stamping/relay.ts';
import { redisFor, startSandboxProcess, swClients, type SandboxProcess } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    backlog: { type: 'string', default: '50000' },
    share: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '32' },
    'reference-timeout': { type: 'string', default: '60' },
    window: { type: 'string', default: '10' },
    /** `stamp-group` jobs, as the worker's default (STAMP_JOB_GROUPS); `off`: a job a row. */
    groups: { type: 'string', default: 'on' },
  },
});
const backlog = Number(values.backlog);
const share = Number(values.share);
const concurrency = Number(values.concurrency);
const referenceTimeoutMs = Number(values['reference-timeout']) * 1000;
const TARGET_SECONDS = 5;
const say = (line: string) => process.stdout.write(`${line}\n`);

const ORGS = {
  busy: { id: randomUUID(), rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', cp: '42501' },
  quiet: { id: randomUUID(), rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', cp: '36257' },
} as const;
type Org = (typeof ORGS)[keyof typeof ORGS];
const csds = new Map<string, Csd>(Object.values(ORGS).map((o) => [o.id, loadTestCsd(o.rfc)]));

function request(org: Org, serie: string, folio: number): InvoiceRequestInput {
  return sampleIngreso({
    sourceId: `fair-${serie}-${folio}`,
    serie,
    folio: String(folio),
    lugarExpedicion: org.cp,
    emisor: { rfc: org.rfc, nombre: org.nombre, regimenFiscal: org.regimenFiscal },
  });
}

/** `n` pending payments of `org` in serie `serie`, as the owner writes them in bulk (no NOTIFY). */
async function loadBacklog(owner: PrismaClient, org: Org, serie: string, n: number): Promise<void> {
  for (let start = 0; start < n; start += 1000) {
    const frozen = Array.from({ length: Math.min(1000, n - start) }, (_, k) =>
      freezeComprobante(request(org, serie, start + k + 1), csds.get(org.id)!),
    );
    const invoices = frozen.map((f, k) => ({
      id: randomUUID(),
      organizationId: org.id,
      kind: 'I',
      serie,
      folio: start + k + 1,
      fecha: f.fecha,
      moneda: 'MXN',
      subTotal: f.subTotal,
      total: f.total,
      status: 'pending' as const,
      stampKey: f.stampKey,
      frozenXml: f.xml,
      cadenaOriginal: f.cadenaOriginal,
    }));
    await owner.invoice.createMany({ data: invoices });
    await owner.outboxRow.createMany({
      data: invoices.map((i) => ({ kind: 'stamp', invoiceId: i.id, stampKey: i.stampKey, organizationId: org.id })),
    });
  }
}

/** One payment of `org`, written on its own client as the API writes it (with its NOTIFY). */
async function onePayment(clients: OrganizationClients, org: Org, serie: string): Promise<string> {
  const f = freezeComprobante(request(org, serie, 1), csds.get(org.id)!);
  const prisma = clients.for(org.id);
  const [id] = await prisma.$transaction((tx) =>
    insertInvoices(tx, org.id, [
      {
        kind: 'I',
        serie,
        folio: 1,
        paymentId: null,
        stampKey: f.stampKey,
        moneda: 'MXN',
        status: 'pending',
        frozen: f,
        totals: f,
      },
    ]),
  );
  return id!;
}

/** The backlog's stamping rate is measured over this window from the single payment's commit (or longer). */
const RATE_WINDOW_MS = Number(values.window) * 1000;

interface Outcome {
  /** Seconds from the single payment's commit to its stamp; undefined: not within the timeout. */
  waited: number | undefined;
  /** The backlog's stamped payments a second, from the single payment's commit on. */
  rate: number;
  /** How much of the backlog was stamped before the single payment came. */
  aheadAtArrival: number;
}

async function run(
  url: string,
  owner: PrismaClient,
  sandbox: SandboxProcess,
  withShare: boolean,
  timeoutMs: number,
): Promise<Outcome> {
  const tag = randomBytes(2).toString('hex');
  const serie = `F${tag}`;
  await loadBacklog(owner, ORGS.busy, serie, backlog);
  const clients = new OrganizationClients(url, { poolSize: 10 });
  const redis = redisFor();
  const w = createWorker(
    {
      prisma: clients.for(ORGS.busy.id),
      redis,
      prefix: `{fair${tag}}`,
      chain: new PacChain(swClients(sandbox, { connectMs: 2_000, responseMs: 10_000 }), {
        threshold: 5,
        coolDownMs: 5_000,
      }),
      retry: { attempts: 10, baseDelayMs: 100, maxDelayMs: 2_000 },
      concurrency,
      relayBatchSize: 100,
      stampGroups: values.groups !== 'off',
      ...(withShare ? { relayShare: { maxEnqueued: share, windowMs: 60_000 } } : {}),
      logger: pino({ level: 'error' }),
      organizations: {
        home: ORGS.busy.id,
        open: (id) => Promise.resolve({ prisma: clients.for(id) }),
        ids: () => organizationIds(clients.unscoped),
        pending: () => pendingOrganizations(clients.unscoped),
      },
      // As main.ts: the stamp writes and the relay's claims shared by the organizations.
      across: clients.across(),
    },
    { autorun: false },
  );
  const logger = pino({ level: 'error' });
  const stamped = async (org: Org) =>
    clients.for(org.id).invoice.count({ where: { serie, status: 'stamped' } }) as Promise<number>;
  const relay = runRelay(w.relay, { databaseUrl: url, pollMs: 1000, logger });
  void w.worker.run();
  // The backlog under way: its first stamps are in.
  while ((await stamped(ORGS.busy)) < Math.min(backlog, concurrency * 2)) await sleep(50);
  const aheadAtArrival = await stamped(ORGS.busy);
  const single = await onePayment(clients, ORGS.quiet, serie);
  const arrived = process.hrtime.bigint();
  let waited: number | undefined;
  while (Number(process.hrtime.bigint() - arrived) / 1e6 < timeoutMs) {
    const row = await clients
      .for(ORGS.quiet.id)
      .invoice.findUnique({ where: { id: single }, select: { status: true } });
    if (row?.status === 'stamped') {
      waited = Number(process.hrtime.bigint() - arrived) / 1e9;
      break;
    }
    await sleep(20);
  }
  // The backlog's rate over the same window in both runs (it may have run out: then up to its end).
  const elapsed = () => Number(process.hrtime.bigint() - arrived) / 1e6;
  while (elapsed() < RATE_WINDOW_MS && (await stamped(ORGS.busy)) < backlog) await sleep(100);
  const rate = ((await stamped(ORGS.busy)) - aheadAtArrival) / (elapsed() / 1000);
  await relay.stop();
  await w.close();
  await redis.quit();
  // What is left of the backlog stays pending: the next run has its own serie and share.
  await owner.$executeRaw`UPDATE outbox SET status = 'done' WHERE status <> 'done'`;
  await clients.close();
  return { waited, rate, aheadAtArrival };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const db = await createTestDatabase();
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
for (const o of Object.values(ORGS))
  await sql.query(
    'INSERT INTO emisores (id, rfc, nombre, regimen_fiscal, lugar_expedicion) VALUES ($1, $2, $3, $4, $5)',
    [o.id, o.rfc, o.nombre, o.regimenFiscal, o.cp],
  );
await sql.end();
const owner = createPrisma(db.url, { poolSize: 4 });
const sandbox = await startSandboxProcess();
try {
  say(`fairness: a backlog of ${backlog} payments of one organization, then one payment of another`);
  const fair = await run(db.url, owner, sandbox, true, Math.max(referenceTimeoutMs, 60_000));
  const reference = await run(db.url, owner, sandbox, false, referenceTimeoutMs);
  const shown = (o: Outcome) =>
    o.waited === undefined ? `> ${referenceTimeoutMs / 1000} s` : `${o.waited.toFixed(2)} s`;
  say(
    `  with a share of ${share} an organization: stamped ${shown(fair)} after its commit (${fair.aheadAtArrival} of the backlog stamped before it came); the backlog stamped at ${fair.rate.toFixed(0)}/s meanwhile`,
  );
  say(
    `  without a share (reference):            stamped ${shown(reference)} after its commit; the backlog at ${reference.rate.toFixed(0)}/s`,
  );
  const met = fair.waited !== undefined && fair.waited <= TARGET_SECONDS;
  say(
    `  target: the single payment within ${TARGET_SECONDS} s behind a backlog of ${backlog}: ${shown(fair)}  ${met ? 'OK' : 'MISSED'}`,
  );
} finally {
  await sandbox.stop();
  await owner.$disconnect();
  await db.drop();
}
