/**
 * `npm run bench:drain [-- --rows N --concurrency C --slow-concurrency C --slow-latency P50,P99 --slow-rows N
 * --database-url URL --json]` — loads N frozen outbox rows, starts the relay and the stamp worker in
 * this process against the sandbox (its own process, no injected latency) and measures stamped
 * invoices per second until the backlog is empty. Beside it, measured in the same run: the sandbox's
 * own stamp rate through the SW client, and the pgbench rate of the worker's commit shape (invoice
 * update + outbox update + PAC-attempt insert). Target: drain ≥ 50% of the lower ceiling.
 *
 * Then a real PAC's latency: the sandbox answers after a log-normal delay (p50 400 ms, p99 3 s unless
 * told) and one worker process runs `--slow-concurrency` stamp jobs at once (256 unless told). Little's
 * law bounds its rate at concurrency ÷ mean latency; target ≥ 90% of it, measured between the 10th and
 * the 90th percentile of the rows' stamping times (the ramp-up and the last, slowest answers are not a
 * steady rate). Beside it, the same drain with the PAC answering at once: on a machine where the
 * sandbox and Postgres share the cores, that is the bound, and the one to compare with (printed). The
 * process's CPU a stamped payment is printed beside that drain's: waiting must be cheap.
 *
 * `--database-url` drains on an existing (migrated) database and leaves it there, and `--json` prints
 * the drain rate alone as one JSON line (bench:history compares it with and without history).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { pino } from 'pino';
import { freezeComprobante } from '@timbra/cfdi-core';
import { TEST_EMISOR, cpuMs, loadTestCsd, percentile } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase } from '@timbra/db/testing';
import { createWorker } from '../src/create-worker.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import { redisFor, startSandboxProcess, swClients, type SandboxProcess } from '../test/helpers.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '32' },
    'slow-concurrency': { type: 'string', default: '256' },
    /** The sandbox's latency in the slow phase: `P50,P99` in ms (log-normal), or one fixed figure. */
    'slow-latency': { type: 'string', default: '400,3000' },
    /** Rows of the slow phase: 12 per slot unless told. */
    'slow-rows': { type: 'string' },
    'database-url': { type: 'string' },
    json: { type: 'boolean', default: false },
    /** `stamp-group` jobs, as the worker's default (STAMP_JOB_GROUPS); `off`: a job a row. */
    groups: { type: 'string', default: 'on' },
  },
});
// Each run's documents have their own serie and keys, so runs can share a database.
const run = randomBytes(2).toString('hex');
const rows = Number(values.rows);
const concurrency = Number(values.concurrency);
const slowConcurrency = Number(values['slow-concurrency']);
const slowLatency = parseLatency(values['slow-latency']);
const slowRows = Number(values['slow-rows'] ?? slowConcurrency * 12);
const csd = loadTestCsd('EKU9003173C9');
const say = (line: string) => process.stdout.write(`${line}\n`);

/** `400,3000` → { p50: 400, p99: 3000 }; `100` → 100. */
function parseLatency(text: string): number | { p50: number; p99: number } {
  const parts = text.split(',').map(Number);
  if (parts.length === 1 && Number.isInteger(parts[0]) && parts[0]! >= 0) return parts[0]!;
  if (parts.length === 2 && parts.every((n) => Number.isInteger(n) && n > 0)) return { p50: parts[0]!, p99: parts[1]! };
  throw new Error(`--slow-latency is P50,P99 or a fixed number of ms, not ${text}`);
}
const describeLatency = (l: number | { p50: number; p99: number }, mean: number) =>
  typeof l === 'number' ? `${l} ms` : `log-normal p50 ${l.p50} ms, p99 ${l.p99} ms (mean ${mean.toFixed(0)} ms)`;

function freeze(i: number, tag: string) {
  return freezeComprobante(
    {
      tipoDeComprobante: 'I',
      sourceId: `drain-${run}-${tag}-${i}`,
      issuedAt: new Date(Date.now() - 60_000).toISOString(),
      serie: 'D',
      folio: String(i + 1),
      lugarExpedicion: '42501',
      formaPago: '04',
      metodoPago: 'PUE',
      emisor: { ...TEST_EMISOR },
      receptor: {
        rfc: 'XAXX010101000',
        nombre: 'PUBLICO EN GENERAL',
        domicilioFiscalReceptor: '42501',
        regimenFiscalReceptor: '616',
        usoCFDI: 'S01',
      },
      informacionGlobal: { periodicidad: '01', meses: '11', año: 2026 },
      conceptos: [
        {
          claveProdServ: '01010101',
          cantidad: '1',
          claveUnidad: 'ACT',
          descripcion: 'Venta',
          valorUnitario: '100.00',
          objetoImp: '02',
          traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
        },
      ],
    },
    csd,
  );
}

async function load(prisma: PrismaClient, n: number, tag: string): Promise<void> {
  const emisor = await prisma.emisor.upsert({
    where: { rfc: 'EKU9003173C9' },
    create: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', lugarExpedicion: '42501' },
    update: {},
  });
  for (let start = 0; start < n; start += 1000) {
    const batch = Array.from({ length: Math.min(1000, n - start) }, (_, k) => freeze(start + k, tag));
    const invoices = batch.map((f, k) => ({
      id: crypto.randomUUID(),
      organizationId: emisor.id,
      kind: 'I',
      serie: `D${run}${tag}`,
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
    await prisma.invoice.createMany({ data: invoices });
    await prisma.outboxRow.createMany({
      data: invoices.map((i) => ({ kind: 'stamp', invoiceId: i.id, stampKey: i.stampKey })),
    });
  }
  // As autovacuum would after such a load: the worker's statements are planned once per session, and
  // a plan made on the first drain's few rows would scan these tables whole (every call, each drain
  // costlier than the last).
  await prisma.$executeRawUnsafe('ANALYZE invoices, outbox');
}

interface Drain {
  /** Rows stamped a second, from the first claim to the backlog empty. */
  rate: number;
  /** Rows stamped a second between the 10th and the 90th percentile of their stamping times. */
  steadyRate: number;
  /** This process's CPU (relay + worker) a stamped row, ms. */
  cpuMs: number;
  /** The share of the machine's cores busy between p10 and p90 (every process: the sandbox, Postgres too). */
  busy: number;
  /** The sandbox's CPU between p10 and p90, as a share of one core (a Node process: one core is its limit). */
  sandboxBusy: number;
  /** CPU ms a stamped row between p10 and p90: this process, Postgres (every backend), Redis, the sandbox. */
  perStamp: { own: number; postgres: number; redis: number; sandbox: number };
  /** PAC calls in flight (the worker's slots taken), the mean of a sample every 100 ms while more than twice the slots were left. */
  active: number;
}

/** Busy and total CPU time of the machine's cores so far, ms. */
function machineTimes(): { busy: number; all: number } {
  return cpus().reduce(
    (sum, { times: t }) => {
      const busy = t.user + t.nice + t.sys + t.irq;
      return { busy: sum.busy + busy, all: sum.all + busy + t.idle };
    },
    { busy: 0, all: 0 },
  );
}

async function drain(
  prisma: PrismaClient,
  sandbox: SandboxProcess,
  n: number,
  tag: string,
  slots: number = concurrency,
): Promise<Drain> {
  await load(prisma, n, tag);
  const redis = redisFor();
  const w = createWorker(
    {
      prisma,
      redis,
      prefix: `{drain${randomBytes(3).toString('hex')}}`,
      chain: new PacChain(swClients(sandbox, { connectMs: 2_000, responseMs: 10_000 }), {
        threshold: 5,
        coolDownMs: 5_000,
      }),
      retry: { attempts: 10, baseDelayMs: 100, maxDelayMs: 2_000 },
      concurrency: slots,
      relayBatchSize: 500,
      stampGroups: values.groups !== 'off',
      logger: pino({ level: 'error' }),
    },
    { autorun: false },
  );
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  // Every 100 ms: the machine's and the sandbox's CPU so far, to read them over the steady window.
  const samples: {
    at: number;
    machine: { busy: number; all: number };
    sandbox: number;
    postgres: number;
    redis: number;
    own: number;
  }[] = [];
  const sample = () =>
    samples.push({
      at: Date.now(),
      machine: machineTimes(),
      sandbox: cpuMs({ pid: sandbox.pid }),
      postgres: cpuMs({ comm: 'postgres' }),
      redis: cpuMs({ comm: 'redis-server' }),
      own: cpuMs({ pid: process.pid }),
    });
  sample();
  void w.worker.run();
  await w.relay.drainAll();
  const active: number[] = [];
  for (;;) {
    // The open rows (outbox_open_idx): each drain ends with none, so they are this drain's.
    const left = await prisma.outboxRow.count({ where: { status: { not: 'done' } } });
    if (left === 0) break;
    sample();
    if (left > 2 * slots) active.push(w.slots.inFlight);
    if (left > 0 && (await prisma.outboxRow.count({ where: { status: 'pending' } })) > 0) await w.relay.drainAll();
    await new Promise((r) => setTimeout(r, 100));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  sample();
  await w.close();
  await redis.quit();
  const times = (await prisma.invoice.findMany({ where: { serie: `D${run}${tag}` }, select: { stampedAt: true } }))
    .map((i) => i.stampedAt?.getTime() ?? Number.NaN)
    .sort((a, b) => a - b);
  const [t10, t90] = [percentile(times, 10), percentile(times, 90)];
  // The samples nearest the window's ends (the window spans many samples: 80% of the rows).
  const near = (t: number) => samples.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best));
  const [from, to] = [near(t10), near(t90)];
  return {
    rate: n / seconds,
    steadyRate: t90 > t10 ? (0.8 * n) / ((t90 - t10) / 1000) : Number.NaN,
    cpuMs: (used.user + used.system) / 1000 / n,
    busy: (to.machine.busy - from.machine.busy) / Math.max(1, to.machine.all - from.machine.all),
    sandboxBusy: (to.sandbox - from.sandbox) / Math.max(1, to.at - from.at),
    perStamp: (() => {
      const stamped = times.filter((t) => t >= from.at && t <= to.at).length || 1;
      return {
        own: (to.own - from.own) / stamped,
        postgres: (to.postgres - from.postgres) / stamped,
        redis: (to.redis - from.redis) / stamped,
        sandbox: (to.sandbox - from.sandbox) / stamped,
      };
    })(),
    active: active.length > 0 ? active.reduce((sum, a) => sum + a, 0) / active.length : 0,
  };
}

async function sandboxRate(sandbox: SandboxProcess, n: number): Promise<number> {
  const [client] = swClients(sandbox, { connectMs: 2_000, responseMs: 10_000 });
  const docs = Array.from({ length: n }, (_, i) => {
    const f = freeze(i, `ceiling${randomBytes(2).toString('hex')}`);
    return { xml: f.xml, key: f.stampKey };
  });
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < docs.length) {
        const d = docs[next++]!;
        await client!.stamp(d.xml, { idempotencyKey: d.key });
      }
    }),
  );
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

function pgbenchCommitShape(url: string, seconds: number): number {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-pgbench-'));
  try {
    writeFileSync(
      join(dir, 'commit.sql'),
      [
        '\\set n random(1, 1000000)',
        'BEGIN;',
        `UPDATE bench_invoices SET uuid = gen_random_uuid()::text, tfd_xml = repeat('t', 1200), pac = 'primary', stamped_at = now(), status = 'stamped' WHERE id = :n;`,
        `UPDATE bench_outbox SET status = 'done', attempts = attempts + 1 WHERE id = :n;`,
        `INSERT INTO bench_attempts (invoice_id, pac, outcome, duration_ms) VALUES (:n, 'primary', 'stamped', 12);`,
        'COMMIT;',
      ].join('\n'),
    );
    const u = new URL(url);
    const args = [
      '-h',
      u.hostname,
      '-p',
      u.port || '5432',
      '-U',
      decodeURIComponent(u.username) || 'postgres',
      u.pathname.slice(1),
    ];
    execFileSync('psql', [
      ...args,
      '-qc',
      `CREATE TABLE bench_invoices (id int PRIMARY KEY, uuid text, tfd_xml text, pac text, stamped_at timestamptz, status text);
      CREATE TABLE bench_outbox (id int PRIMARY KEY, status text, attempts int DEFAULT 0);
      CREATE TABLE bench_attempts (id bigserial PRIMARY KEY, invoice_id int, pac text, outcome text, duration_ms int);
      INSERT INTO bench_invoices (id, status) SELECT g, 'pending' FROM generate_series(1, 1000000) g;
      INSERT INTO bench_outbox (id, status) SELECT g, 'pending' FROM generate_series(1, 1000000) g;`,
    ]);
    const out = execFileSync(
      'pgbench',
      [
        '-n',
        '-c',
        String(Math.min(concurrency, 16)),
        '-j',
        '2',
        '-T',
        String(seconds),
        '-f',
        join(dir, 'commit.sql'),
        ...args,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The sandbox validating nothing: it is the instrument (its checks are its own tests' business), and
// one Node process is one core: checking the SAT rules too, it was the limit of the drain with latency.
const sandbox = await startSandboxProcess({ validation: 'off' });
const given = values['database-url'];
const db = given ? { url: given, drop: () => Promise.resolve() } : await createTestDatabase();
const prisma = createPrisma(db.url, { poolSize: 20 });
if (values.json) {
  try {
    const fast = await drain(prisma, sandbox, rows, 'a');
    process.stdout.write(`${JSON.stringify({ drainRate: fast.rate, rows })}\n`);
  } finally {
    await prisma.$disconnect();
    await db.drop();
    await sandbox.stop();
  }
  process.exit(0);
}
try {
  say(
    `bench:drain — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
  );
  say(
    `${rows} frozen outbox rows, worker concurrency ${concurrency}, relay + worker in this process, sandbox in its own`,
  );
  const ceilingSandbox = await sandboxRate(sandbox, Math.min(2000, Math.max(300, Math.floor(rows / 5))));
  const ceilingPg = pgbenchCommitShape(db.url, 5);
  const fast = await drain(prisma, sandbox, rows, 'a');
  // What this machine stamps at the slow phase's concurrency when the PAC answers at once: on a small
  // machine the sandbox's signing and Postgres share the cores with the worker, and this is the bound.
  const capacity = await drain(prisma, sandbox, slowRows, 'c', slowConcurrency);
  // The sandbox owns its distribution: it answers with the mean it draws from.
  const { meanLatencyMs } = (await sandbox.admin('faults', { instance: 'primary', latencyMs: slowLatency })) as {
    meanLatencyMs: number;
  };
  const slow = await drain(prisma, sandbox, slowRows, 'b', slowConcurrency);
  const ceiling = Math.min(ceilingSandbox, ceilingPg);
  const bound = slowConcurrency / (meanLatencyMs / 1000);
  const slowShare = slow.steadyRate / bound;
  const pct = (n: number) => `${(n * 100).toFixed(1)}%`;
  say('');
  say(
    `  drain, no injected latency          ${fast.rate.toFixed(0).padStart(7)} stamped/s   (this process's CPU ${fast.cpuMs.toFixed(2)} ms a stamp)`,
  );
  say(`  ceiling: sandbox via SW client      ${ceilingSandbox.toFixed(0).padStart(7)} stamps/s   ← reference`);
  say(`  ceiling: pgbench, commit shape      ${ceilingPg.toFixed(0).padStart(7)} tps        ← reference`);
  say(
    `  drain / lower ceiling = ${pct(fast.rate / ceiling)}   (target ≥ 50%)  ${fast.rate / ceiling >= 0.5 ? 'OK' : 'MISSED'}`,
  );
  say('');
  say(
    `  a real PAC's latency: ${describeLatency(slowLatency, meanLatencyMs)}; one worker process at concurrency ${slowConcurrency}; ${slowRows} rows; rates between the 10th and 90th percentile of the stamping times`,
  );
  say(`    concurrency ÷ mean latency         ${bound.toFixed(0).padStart(7)} stamps/s   ← reference`);
  say(
    `    the same drain, PAC answering at once ${capacity.steadyRate.toFixed(0).padStart(4)} stamped/s  ← reference (this machine's capacity; cores ${pct(capacity.busy)} busy, the sandbox ${pct(capacity.sandboxBusy)} of one)`,
  );
  say(
    `    the drain with the PAC's latency   ${slow.steadyRate.toFixed(0).padStart(7)} stamped/s   (cores ${pct(slow.busy)} busy, the sandbox ${pct(slow.sandboxBusy)} of one; whole drain ${slow.rate.toFixed(0)}/s, the ramp-up and the slowest answers included)`,
  );
  say(
    `    a real PAC's latency, ${slowConcurrency} in flight: ${slow.steadyRate.toFixed(0)} stamped/s = ${pct(slowShare)} of concurrency ÷ mean latency   (target ≥ 90%)  ${slowShare >= 0.9 ? 'OK' : 'MISSED'}${bound > capacity.steadyRate ? ' — the bound is above what this machine stamps with no latency at all' : ''}`,
  );
  say(
    `    PAC calls in flight, mean          ${slow.active.toFixed(0).padStart(7)}   (of ${slowConcurrency}; the PAC answering at once: ${capacity.active.toFixed(0)})`,
  );
  const split = (d: Drain) =>
    `this process ${d.perStamp.own.toFixed(2)}, Postgres ${d.perStamp.postgres.toFixed(2)}, Redis ${d.perStamp.redis.toFixed(2)}, the sandbox ${d.perStamp.sandbox.toFixed(2)}`;
  say(`    CPU ms a stamp, p10–p90: ${split(slow)}`);
  say(`                the PAC answering at once: ${split(capacity)} ← reference`);
  say(
    `    this process's CPU a stamp         ${slow.cpuMs.toFixed(2).padStart(7)} ms   (the PAC answering at once: ${capacity.cpuMs.toFixed(2)} ms ← reference)`,
  );
} finally {
  await prisma.$disconnect();
  await db.drop();
  await sandbox.stop();
}
