/**
 * `npm run bench:e2e [-- --seconds S --rate R --latency-ms L --concurrency C --organizations K]` — the end-to-end
 * benchmark: the real API, worker and PAC sandbox (as their own processes, private Redis, fresh
 * database), the sandbox answering every stamp after L ms (default 50). Signed Stripe webhooks go in:
 *
 * 1. at a fixed rate (R/s, default 100) for S seconds, then
 * 2. as fast as C concurrent senders (default 32) can for S seconds;
 *
 * and it measures webhook → stamped latency p50/p95/p99 (from the 2xx to the invoice's stamped_at),
 * sustained stamped throughput, and relay latency (from the API's 2xx, just after its commit, to
 * the job becoming active in a worker; the relay wakes on NOTIFY); per stamped payment, the CPU of
 * each process and the messages it took (Redis commands, Postgres commits). Beside them, measured in
 * the same run: pgbench on the payment transaction's shape, the raw RSA verify+sign rate, and the
 * bound the PAC latency sets (worker concurrency / latency). Targets on a 2-core machine: relay p99
 * < 50 ms; sustained ≥ 40% of the lowest of those ceilings.
 *
 * Before the clock, `--history N` stamped invoices (default 20 000) are written in SQL with what
 * surrounds them (scripts/lib/history.ts), as production's tables have months of them: what is
 * planned once is then planned on tables of a realistic size.
 *
 * Postgres is a private cluster (`initdb` in a temporary directory) with pg_stat_statements loaded:
 * its CPU is that cluster's alone, and each phase prints the statements a stamped payment took, the
 * most expensive first (time, calls, rows and WAL). Targets: Redis commands a stamped payment ≤ 20
 * saturated and ≤ 30 at 100/s; Postgres commits a stamped payment ≤ 3 at 100/s.
 *
 * `--organizations K` (platform mode): K organizations made through /v1/organizations (a CSD by the
 * tests' CA and a Stripe account each, the sandbox's "SAT" told of each emisor), each one's first
 * payment stamped before the clock; then both phases twice — every payment to one organization (the
 * reference), then spread over all K — and the two side by side. Target: spread within 10% of one.
 *
 * `--compare COMMIT [--pairs N]`: this benchmark run N times (default 3) on COMMIT's product code and
 * N times on this checkout's, alternating, and each ratio printed (e2e-compare.ts). `--tree DIR` runs
 * the apps from another checkout, its database made with that checkout's migrations: what
 * `--compare` runs for the baseline. `--json FILE` writes the figures the comparison reads.
 * `--groups off`: a job a row (STAMP_JOB_GROUPS=false), to weigh the stamp-group jobs on one commit.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import {
  cpuMs,
  freePorts,
  makeStripeOrganizations,
  percentile,
  registerTaxpayer,
  rawVerifySignRate,
  stripeSignatureHeader,
  testCaFile,
  testCsdPaths,
} from '@timbra/test-support';
import { createPrisma, leanDb, Prisma } from '@timbra/db';
import { STAMP_QUEUE } from '@timbra/db/outbox';
import { DEFAULT_RETENTION } from '@timbra/db/retention';
import { createTestDatabase, pgbenchPaymentShape } from '@timbra/db/testing';
import {
  connectWhenListening,
  privatePostgres,
  privateRedis,
  Proc,
  reportUnexpectedExits,
  ROOT,
  until,
} from '../lib/processes.ts';
import { Canary } from '../lib/canary.ts';
import { bullmqCommandsPerJob, commandsPer, commandstats } from '../lib/bullmq-reference.ts';
import { writeHistory } from '../lib/history.ts';
import { compareE2e, type E2eFigures } from './e2e-compare.ts';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    rate: { type: 'string', default: '100' },
    'latency-ms': { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '32' },
    /** Platform mode: K organizations; each phase run with every payment to one, then spread over K. */
    organizations: { type: 'string' },
    /** This benchmark on COMMIT's product code and on this checkout's, alternating (e2e-compare.ts). */
    compare: { type: 'string' },
    pairs: { type: 'string', default: '3' },
    /** The product code of another checkout (its apps and its migrations): the baseline of --compare. */
    tree: { type: 'string' },
    /** Where to write the figures as JSON (what --compare reads). */
    json: { type: 'string' },
    /** Stamped invoices of history written before the clock (0: none). */
    history: { type: 'string', default: '20000' },
    /** `off`: the workers publish a job a row (STAMP_JOB_GROUPS=false); default: the worker's own. */
    groups: { type: 'string' },
  },
});
if (values.compare !== undefined) {
  // Each run gets every other option as given (and a JSON file of its own); this process only compares.
  const passed: string[] = [];
  for (let i = 2; i < process.argv.length; i++) {
    const arg = process.argv[i]!;
    if (arg === '--compare' || arg === '--pairs') i++;
    else if (!/^--(compare|pairs)=/.test(arg)) passed.push(arg);
  }
  process.exit(await compareE2e({ baseline: values.compare, pairs: Number(values.pairs), args: passed }));
}
const tree = values.tree === undefined ? ROOT : resolve(values.tree);
const organizationCount = values.organizations === undefined ? 0 : Number(values.organizations);
if (values.organizations !== undefined && !(organizationCount >= 2)) throw new Error('--organizations K: K ≥ 2');
// Platform mode: the key that makes the organizations, the master key sealing their CSDs and secrets.
const platform = organizationCount
  ? {
      PLATFORM_KEY: `bench-platform-${randomBytes(16).toString('hex')}`,
      VAULT_KEYS: `bench:${randomBytes(32).toString('base64')}`,
    }
  : undefined;
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const latencyMs = Number(values['latency-ms']);
const senders = Number(values.concurrency);
const workerConcurrency = 32;
/** The most jobs one relay round adds together (the worker's RELAY_BATCH_SIZE; its default). */
const RELAY_BATCH_SIZE = 100;
const out = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const stripeSecret = 'whsec_bench_e2e_local_only';
const adminToken = 'bench-e2e-admin-token';
const [redisPort, apiPort, primaryPort, backupPort, adminPort, postgresPort] = (await freePorts(6)) as [
  number,
  number,
  number,
  number,
  number,
  number,
];
// A Postgres of our own: its CPU is the system's alone, and pg_stat_statements says where it went.
// Statements inside functions and triggers too (track=all): the events an UPDATE's trigger writes, say.
const postgres = privatePostgres(postgresPort, {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track': 'all',
  // Planning apart from execution: a statement planned at every call shows it.
  'pg_stat_statements.track_planning': 'on',
});
postgres.proc.start();
await until('Postgres', postgres.ready, 30_000);
const database = await createTestDatabase({
  serverUrl: postgres.serverUrl,
  migrationsDir: join(tree, 'prisma/migrations'),
});
const redisUrl = `redis://127.0.0.1:${redisPort}`;
// The SAT's test CSD with its certificate re-issued by the tests' CA (valid until 2099).
const csdPaths = testCsdPaths('EKU9003173C9');
const csdEnv = { CSD_CER_PATH: csdPaths.cer, CSD_KEY_PATH: csdPaths.key, CSD_PASSWORD_FILE: csdPaths.passwordFile };
const processes = [
  privateRedis(redisPort),
  Proc.app('sandbox', 'apps/pac-sandbox/src/main.ts', {
    SANDBOX_PRIMARY_PORT: String(primaryPort),
    SANDBOX_BACKUP_PORT: String(backupPort),
    SANDBOX_ADMIN_PORT: String(adminPort),
    SANDBOX_ADMIN_TOKEN: adminToken,
    // The SAT rules, not the XSD (~6 ms of the sandbox's CPU a stamp: a real PAC's own work, on
    // the same two cores as Timbra here). bench:sandbox -- --validation on shows its cost.
    SANDBOX_VALIDATION: 'rules',
    // The emisor's certificate is re-issued by the tests' CA (valid until 2099): trusted here.
    SANDBOX_TRUSTED_CA_FILE: testCaFile(),
    LOG_LEVEL: 'error',
  }),
  Proc.app(
    'api',
    'apps/api/src/main.ts',
    {
      ...csdEnv,
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl,
      PORT: String(apiPort),
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      STRIPE_WEBHOOK_SECRET: stripeSecret,
      // payment_intent.succeeded without a charge to read: no call reaches Stripe's API.
      STRIPE_API_KEY: 'sk_test_bench_unused',
      // Hand-built PaymentIntents made by no Checkout Session: no session to look up at Stripe.
      STRIPE_LINE_ITEMS: 'false',
      RATE_LIMIT_PER_MINUTE: '10000000',
      ...platform,
      LOG_LEVEL: 'error',
    },
    tree,
  ),
  // The relay in a process of its own (WORKER_ROLES), so stamping never delays its event loop.
  ...(['relay,sweeper', 'stamper'] as const).map((roles) =>
    Proc.app(
      `worker (${roles})`,
      'apps/worker/src/main.ts',
      {
        ...csdEnv,
        DATABASE_URL: database.url,
        REDIS_URL: redisUrl,
        WORKER_ROLES: roles,
        WORKER_CONCURRENCY: String(workerConcurrency),
        RELAY_BATCH_SIZE: String(RELAY_BATCH_SIZE),
        ...(values.groups === 'off' ? { STAMP_JOB_GROUPS: 'false' } : {}),
        WORKER_HTTP_PORT: '0',
        PAC_PRIMARY_URL: `http://127.0.0.1:${primaryPort}`,
        SAT_STATUS_URL: `http://127.0.0.1:${primaryPort}/ConsultaCFDIService.svc`,
        ...(platform ? { VAULT_KEYS: platform.VAULT_KEYS } : {}),
        LOG_LEVEL: 'error',
      },
      tree,
    ),
  ),
];
// A process that dies during a measurement makes its figures meaningless: said at once, with why.
reportUnexpectedExits(processes, (line) => out(`!! ${line}`));

const apiUrl = `http://127.0.0.1:${apiPort}`;
const agent = new http.Agent({ keepAlive: true });
/** Payments the API answered 503 (its database busy): sent again after its Retry-After, as a provider redelivers. */
let redelivered = 0;
/**
 * One signed payment_intent.succeeded; resolves with the instant its 2xx arrived. A request on a kept
 * socket the API had just closed as idle (its keep-alive timeout, 5 s, is shorter than the idle
 * phase) is reset before it is read: sent again on a new socket, as Node's docs advise — the event's
 * id makes the webhook idempotent, as when Stripe retries. A 503 with Retry-After (the database busy)
 * is sent again after it, as a provider redelivers; each phase says how many were.
 */
function sendPayment(id: string, path = '/webhooks/stripe'): Promise<number> {
  const body = JSON.stringify({
    id: `evt_${id}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    created: Math.floor(Date.now() / 1000) - 5,
    data: {
      object: { id, object: 'payment_intent', amount: 116000, amount_received: 116000, currency: 'mxn', metadata: {} },
    },
  });
  // `reset`: this send already followed a reset socket; `sent`: how many times the API answered 503.
  const attempt = (reset: boolean, sent = 0): Promise<number> =>
    new Promise((resolve, reject) => {
      const request = http.request(
        `${apiUrl}${path}`,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'stripe-signature': stripeSignatureHeader(body, stripeSecret),
          },
        },
        (response) => {
          // A failure says what the API answered: its error code and request id find its log line.
          let answer = '';
          response.setEncoding('utf8').on('data', (chunk: string) => {
            if (response.statusCode !== 200 && answer.length < 600) answer += chunk;
          });
          response.on('end', () => {
            if (response.statusCode === 200) resolve(Date.now());
            else if (response.statusCode === 503 && response.headers['retry-after'] && sent < 20) {
              redelivered++;
              // A new send, after a wait as long as the API's keep-alive: its socket may be reset too.
              const wait = Number(response.headers['retry-after']) * 1000;
              setTimeout(() => resolve(attempt(false, sent + 1)), wait);
            } else reject(new Error(`HTTP ${response.statusCode} on ${path}: ${answer.slice(0, 600)}`));
          });
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (!reset && request.reusedSocket && error.code === 'ECONNRESET') resolve(attempt(true, sent));
        else reject(error);
      });
      request.end(body);
    });
  return attempt(false);
}

const prisma = createPrisma(database.url, { poolSize: 2 });
/**
 * The benchmark's own statements carry this comment: pg_stat_statements' figures leave them out
 * (the tagged $queryRaw templates write it out, as they cannot interpolate raw text).
 */
const OWN = '/* bench */';
await prisma.$executeRawUnsafe(`${OWN} CREATE EXTENSION IF NOT EXISTS pg_stat_statements`);
const redis = new Redis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });

/**
 * When each job was added and became active, from the stamp queue's events stream read as it is
 * written (BullMQ's XADDs, timed by the stream's ids): the jobs themselves are removed once completed.
 * Its own XREADs are left out of the Redis figures (`reads`).
 */
const jobTimes = {
  added: new Map<string, number>(),
  active: new Map<string, number>(),
  reads: 0,
  stopped: false,
  async follow(reader: Redis): Promise<void> {
    const key = `{timbra}:${STAMP_QUEUE}:events`;
    let last = '$';
    while (!this.stopped) {
      const batch = await reader.xread('COUNT', 5000, 'BLOCK', 500, 'STREAMS', key, last);
      this.reads++;
      for (const [, entries] of batch ?? [])
        for (const [id, fields] of entries) {
          last = id;
          const field = (name: string) => fields[fields.indexOf(name) + 1];
          const event = field('event');
          const jobId = field('jobId');
          const at = Number(id.split('-')[0]);
          if (jobId && event === 'added' && !this.added.has(jobId)) this.added.set(jobId, at);
          if (jobId && event === 'active' && !this.active.has(jobId)) this.active.set(jobId, at);
        }
    }
  },
};
const eventsReader = new Redis(redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });

/** CPU ms so far of each process of the system, Postgres's backends and this load generator. */
function cpuSnapshot(): Record<string, number> {
  const load = process.cpuUsage();
  return {
    ...Object.fromEntries(processes.map((p) => [p.name, cpuMs({ pid: p.pid })])),
    postgres: cpuMs({ tree: postgres.proc.pid }),
    'load generator': (load.user + load.system) / 1000,
  };
}

/** Not Timbra's: the PAC (a real one runs elsewhere) and this process, which plays the providers. */
const NOT_TIMBRA = new Set(['sandbox', 'load generator']);

/**
 * "name 1.23" per stamped payment, from two snapshots, and Timbra's own share (API, relay, stamper,
 * Postgres, Redis: issue #21's figure).
 */
function cpuPerStamp(
  before: Record<string, number>,
  after: Record<string, number>,
  stamped: number,
): { line: string; own: number; postgres: number; sandbox: number; allMs: number } {
  const parts = Object.keys(after).map((name) => [name, (after[name]! - before[name]!) / stamped] as const);
  const total = parts.reduce((sum, [, ms]) => sum + ms, 0);
  const own = parts.reduce((sum, [name, ms]) => sum + (NOT_TIMBRA.has(name) ? 0 : ms), 0);
  return {
    line: `${parts.map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join(' · ')} — total ${total.toFixed(2)} ms`,
    own,
    postgres: parts.find(([name]) => name === 'postgres')![1],
    sandbox: parts.find(([name]) => name === 'sandbox')![1],
    allMs: total * stamped,
  };
}

/** Commands the product's Redis has processed so far, by command: what the queue costs in messages. */
async function redisCommands(): Promise<Map<string, number>> {
  const counts = await commandstats(redis);
  // The benchmark's own reads of the events stream (jobTimes) are not the product's.
  counts.set('xread', (counts.get('xread') ?? 0) - jobTimes.reads);
  return counts;
}

/** Empties pg_stat_statements (the cluster is the benchmark's own): a phase's statements from here. */
async function resetStatements(): Promise<void> {
  await prisma.$queryRawUnsafe(`${OWN} SELECT pg_stat_statements_reset()::text`);
}

/**
 * The product's statements since the last reset, per stamped payment: how many the apps sent, their
 * time and WAL, and the `top` most expensive (execution + planning time) with their calls, time a
 * call, rows and WAL. A statement run inside another's function or trigger is marked "↳": its time
 * is also in its caller's.
 */
async function statementsPer(stamped: number, top = 10): Promise<{ total: number; lines: string[] }> {
  const all = await prisma.$queryRawUnsafe<
    { query: string; calls: bigint; ms: number; planMs: number; rows: bigint; wal: string; toplevel: boolean }[]
  >(`${OWN} SELECT query, calls, total_exec_time + total_plan_time AS ms, total_plan_time AS "planMs", rows, wal_bytes::text AS wal, toplevel
      FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '${OWN}%'
      ORDER BY ms DESC`);
  const rows = all.filter((r) => r.toplevel);
  const sum = (pick: (r: (typeof rows)[number]) => number) => rows.reduce((n, r) => n + pick(r), 0);
  const calls = sum((r) => Number(r.calls));
  const ms = sum((r) => r.ms);
  const wal = sum((r) => Number(r.wal));
  const text = (query: string) => query.replace(/\s+/g, ' ').slice(0, 110);
  return {
    total: calls / stamped,
    lines: [
      `Postgres statements per stamped payment: ${(calls / stamped).toFixed(1)}, ${(ms / stamped).toFixed(2)} ms of execution and planning (planning ${((100 * sum((r) => r.planMs)) / ms).toFixed(0)}%), ${(wal / stamped / 1024).toFixed(1)} KiB of WAL (pg_stat_statements); the most expensive:`,
      ...all
        .slice(0, top)
        .map(
          (r) =>
            `  ${((100 * r.ms) / ms).toFixed(0).padStart(3)}%  ${(Number(r.calls) / stamped).toFixed(2)}/payment  ${(r.ms / Number(r.calls)).toFixed(3)} ms a call (planning ${((100 * r.planMs) / r.ms).toFixed(0)}%)  ${(Number(r.rows) / Number(r.calls)).toFixed(1)} rows  ${(Number(r.wal) / stamped / 1024).toFixed(2)} KiB WAL/payment  ${r.toplevel ? '' : '↳ '}${text(r.query)}`,
        ),
      `the most called (each a message that wakes a backend; one outside a transaction is a commit too): ${rows
        .slice()
        .sort((a, b) => Number(b.calls) - Number(a.calls))
        .slice(0, 8)
        .map((r) => `${(Number(r.calls) / stamped).toFixed(2)} ${text(r.query).slice(0, 48)}`)
        .join(' · ')}`,
    ],
  };
}

/**
 * What a wake-up costs on this machine when a process sleeps between events — as each of Timbra's
 * does at a steady rate — in CPU ms: a timer alone (this process), and a prepared statement's round
 * trip to Postgres on the lean runner after such a sleep, beyond the timer (this process and its
 * backend). At a steady rate every message a payment takes (an HTTP request, a statement, a queue
 * command) is such a wake-up somewhere: their count sets the cost per payment more than the work.
 */
async function wakeUpCosts(rounds = 300): Promise<{ timer: number; roundTrip: number }> {
  const own = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const timerStart = own();
  for (let i = 0; i < rounds; i++) await sleep(10);
  const timer = (own() - timerStart) / rounds;
  const single = createPrisma(database.url, { poolSize: 1 });
  try {
    const lean = leanDb(single);
    const [backend] = await lean.$queryRaw<{ pid: number }[]>(Prisma.sql`SELECT pg_backend_pid() AS pid`);
    const pid = backend!.pid;
    const start = own() + cpuMs({ pid });
    for (let i = 0; i < rounds; i++) {
      await lean.$queryRaw(Prisma.sql`SELECT ${i}::int AS n`);
      await sleep(10);
    }
    return { timer, roundTrip: (own() + cpuMs({ pid }) - start) / rounds - timer };
  } finally {
    await single.$disconnect();
  }
}

/**
 * Transactions committed so far in the benchmark's database (pg_stat_database): each statement the
 * lean runner sends outside a transaction is one, so per payment it counts the messages that wake a
 * backend. Approximate: a backend reports its counts about once a second.
 */
async function postgresCommits(): Promise<number> {
  const [row] = await prisma.$queryRaw<{ n: bigint }[]>`/* bench */
    SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`;
  return Number(row!.n);
}

interface PhaseResult {
  sent: number;
  /** Postgres commits per stamped payment (the benchmark's own polling included: ~4 a second). */
  postgresCommits: number;
  /** Redis commands per stamped payment (counted before the benchmark's own reads of the jobs). */
  redisCommands: { total: number; line: string };
  /** The product's Postgres statements per stamped payment, and the most expensive. */
  statements: { total: number; lines: string[] };
  stamped: number;
  sustained: number;
  latency: { p50: number; p95: number; p99: number };
  /** 2xx → job active: what the target is about. */
  relay: { p50: number; p99: number };
  /** Its two parts: 2xx → the relay added the job; added → a worker took it. */
  added: { p50: number; p99: number };
  pickup: { p50: number; p99: number };
}

/** Waits for the phase's invoices to be stamped, then reads the figures. */
async function measure(
  acked: Map<string, number>,
  firstSend: number,
  commandsBefore: Map<string, number>,
  commitsBefore: number,
): Promise<PhaseResult> {
  const ids = [...acked.keys()];
  let rows: { external_id: string; stamp_key: string; stamped_at: Date | null; job_group: string | null }[];
  const deadline = Date.now() + 120_000;
  // By the payments' unique index (provider first): without the provider, each poll scanned every
  // payment against the phase's ids, a cost in the Postgres figure that is the benchmark's, not Timbra's.
  for (;;) {
    rows = await prisma.$queryRaw`/* bench */
      SELECT p.external_id, i.stamp_key, i.stamped_at,
             -- The stamp-group job it went in, where the product groups them (a baseline may not).
             (SELECT to_jsonb(o) ->> 'job_group' FROM outbox o WHERE o.invoice_id = i.id AND o.kind = 'stamp' LIMIT 1) AS job_group
      FROM payments p JOIN invoices i ON i.payment_id = p.id
      WHERE p.provider = 'stripe' AND p.external_id = ANY(${ids}::text[])`;
    if (rows.length === ids.length && rows.every((r) => r.stamped_at)) break;
    if (Date.now() > deadline) break;
    await sleep(250);
  }
  const stampedRows = rows.filter((r) => r.stamped_at);
  const commands = commandsPer(commandsBefore, await redisCommands(), stampedRows.length);
  const commits = ((await postgresCommits()) - commitsBefore) / stampedRows.length;
  const statements = await statementsPer(stampedRows.length);
  const latencies = stampedRows.map((r) => r.stamped_at!.getTime() - acked.get(r.external_id)!).sort((a, b) => a - b);
  const lastStamp = Math.max(...stampedRows.map((r) => r.stamped_at!.getTime()));
  const relay: number[] = [];
  const added: number[] = [];
  const pickup: number[] = [];
  for (const r of stampedRows) {
    const jobId = r.job_group ?? r.stamp_key;
    const addedAt = jobTimes.added.get(jobId);
    const activeAt = jobTimes.active.get(jobId);
    if (addedAt === undefined || activeAt === undefined) continue;
    const ok = acked.get(r.external_id)!;
    relay.push(activeAt - ok);
    added.push(addedAt - ok);
    pickup.push(activeAt - addedAt);
  }
  for (const list of [relay, added, pickup]) list.sort((a, b) => a - b);
  const p50p99 = (list: number[]) => ({ p50: percentile(list, 50), p99: percentile(list, 99) });
  return {
    sent: ids.length,
    redisCommands: commands,
    statements,
    postgresCommits: commits,
    stamped: stampedRows.length,
    sustained: stampedRows.length / ((lastStamp - firstSend) / 1000),
    latency: { p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99) },
    relay: p50p99(relay),
    added: p50p99(added),
    pickup: p50p99(pickup),
  };
}

let exitCode = 1;
// The machine's speed through each phase, measured beside it (../lib/canary.ts).
const canary = new Canary();
try {
  for (const p of processes) p.start();
  await connectWhenListening(redis, 'Redis', 20_000);
  eventsReader.on('error', () => undefined);
  await eventsReader.connect();
  void jobTimes.follow(eventsReader).catch(() => undefined);
  await until('the API', async () => (await fetch(`${apiUrl}/readyz`)).ok, 60_000);
  // History first, as production has it: the stamp's write is planned once per session (lean.ts),
  // and planned on nearly empty tables it would scan them whole for the rest of the run.
  const historyInvoices = Number(values.history);
  if (historyInvoices > 0) {
    const [home] = await prisma.$queryRaw<{ id: string }[]>`/* bench */
      SELECT id::text AS id FROM emisores ORDER BY created_at LIMIT 1`;
    await writeHistory({
      prisma,
      databaseUrl: database.url,
      organizationId: home!.id,
      invoices: historyInvoices,
      chunk: 100_000,
      retention: DEFAULT_RETENTION,
      say: (line) => process.stderr.write(`${new Date().toISOString()} bench:e2e history:${line}\n`),
    });
  }
  const admin = await fetch(`http://127.0.0.1:${adminPort}/__admin/faults`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ instance: 'primary', latencyMs }),
  });
  if (!admin.ok) throw new Error(`sandbox admin: HTTP ${admin.status}`);
  // Warm-up: the first requests load code paths in every process.
  await Promise.all(Array.from({ length: 50 }, (_, i) => sendPayment(`pi_warm_${i}`)));
  await sleep(2000);

  // Idle: what each process spends with nothing to do (pollers, timers, metrics) — at a steady rate
  // it is paid whatever the load, so it weighs on a payment at 100/s and hardly when saturated.
  const idleSeconds = Math.min(5, seconds);
  const idleCpu = cpuSnapshot();
  await sleep(idleSeconds * 1000);
  const idleAfter = cpuSnapshot();
  const idleLine = Object.keys(idleAfter)
    .map((name) => `${name} ${((idleAfter[name]! - idleCpu[name]!) / idleSeconds).toFixed(1)}`)
    .join(' · ');

  /** The organizations (platform mode): each one's webhook path; its first payment stamped. */
  let paths = ['/webhooks/stripe'];
  let platformSetup: { madeSeconds: number; warmSeconds: number } | undefined;
  if (platform) {
    const made = await makeStripeOrganizations({
      apiUrl,
      platformKey: platform.PLATFORM_KEY,
      count: organizationCount,
      secret: stripeSecret,
      log: (line) => out(line),
    });
    // The sandbox's "SAT" knows each emisor (its L_RFC: name, regime and postal code are checked).
    for (const { facts } of made.organizations)
      await registerTaxpayer({ url: `http://127.0.0.1:${adminPort}/__admin`, token: adminToken }, facts);
    paths = made.organizations.map((o) => o.path);
    // Each organization's first payment, stamped: its API and its worker parts built (not measured).
    const warmStart = Date.now();
    const firsts = new Map<string, number>();
    for (let i = 0; i < paths.length; i += 32)
      await Promise.all(
        paths
          .slice(i, i + 32)
          .map(async (path, k) => firsts.set(`pi_first_${i + k}`, await sendPayment(`pi_first_${i + k}`, path))),
      );
    const warm = await measure(firsts, warmStart, await redisCommands(), await postgresCommits());
    if (warm.stamped < paths.length) throw new Error(`only ${warm.stamped} of ${paths.length} first payments stamped`);
    platformSetup = { madeSeconds: made.seconds, warmSeconds: (Date.now() - warmStart) / 1000 };
    out(
      `  ${paths.length} organizations made in ${made.seconds.toFixed(1)} s; the first payment of each stamped in ${platformSetup.warmSeconds.toFixed(1)} s`,
    );
  }

  /** A fixed rate, then as fast as the senders go, each payment to `pathOf(i)`. */
  async function phases(tag: string, pathOf: (i: number) => string) {
    // Phase 1: a fixed rate.
    const progress = (what: string) => process.stderr.write(`${new Date().toISOString()} bench:e2e ${tag}: ${what}\n`);
    progress(`${rate}/s for ${seconds} s`);
    const fixed = new Map<string, number>();
    const fixedCpu = cpuSnapshot();
    const fixedCanary = await canary.read();
    const fixedCommands = await redisCommands();
    const fixedCommits = await postgresCommits();
    await resetStatements();
    const fixedStart = Date.now();
    const fixedRedelivered = redelivered;
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < rate * seconds; i++) {
      const due = fixedStart + (i * 1000) / rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const id = `pi_fixed_${tag}_${i}`;
      const sent = sendPayment(id, pathOf(i)).then((at) => void fixed.set(id, at));
      sent.catch(() => undefined); // handled now, not an unhandled rejection mid-loop: Promise.all reports it
      inFlight.push(sent);
    }
    await Promise.all(inFlight);
    const fixedResult = await measure(fixed, fixedStart, fixedCommands, fixedCommits);
    const fixedCost = cpuPerStamp(fixedCpu, cpuSnapshot(), fixedResult.stamped);
    const fixedMachine = Canary.microsPerPiece(fixedCanary, await canary.read());
    // How busy the machine was (every process measured, the load generator too): near its capacity the
    // fixed rate's latencies are queueing for a core, not the relay's or the stamper's own.
    const fixedBusy = fixedCost.allMs / (Date.now() - fixedStart) / cpus().length;
    const fixedRefused = redelivered - fixedRedelivered;
    if (fixedRefused > 0) progress(`${fixedRefused} answers 503 (the database busy): sent again after Retry-After`);

    // Phase 2: as fast as the senders go.
    progress(`as fast as ${senders} senders go for ${seconds} s`);
    const burst = new Map<string, number>();
    const burstCpu = cpuSnapshot();
    const burstCanary = await canary.read();
    const burstCommands = await redisCommands();
    const burstCommits = await postgresCommits();
    await resetStatements();
    const burstStart = Date.now();
    const burstRedelivered = redelivered;
    let next = 0;
    await Promise.all(
      Array.from({ length: senders }, async () => {
        while (Date.now() - burstStart < seconds * 1000) {
          const i = next++;
          const id = `pi_burst_${tag}_${i}`;
          burst.set(id, await sendPayment(id, pathOf(i)));
        }
      }),
    );
    const burstResult = await measure(burst, burstStart, burstCommands, burstCommits);
    const burstCost = cpuPerStamp(burstCpu, cpuSnapshot(), burstResult.stamped);
    const burstMachine = Canary.microsPerPiece(burstCanary, await canary.read());
    const burstRefused = redelivered - burstRedelivered;
    if (burstRefused > 0) progress(`${burstRefused} answers 503 (the database busy): sent again after Retry-After`);
    return { fixedResult, fixedCost, fixedBusy, fixedMachine, burstResult, burstCost, burstMachine };
  }
  // Platform mode: every payment to one organization first (the reference), then spread over all.
  const one = platform ? await phases('one', () => paths[0]!) : undefined;
  const { fixedResult, fixedCost, fixedBusy, fixedMachine, burstResult, burstCost, burstMachine } = await phases(
    'all',
    (i) => paths[i % paths.length]!,
  );
  const { line: fixedCpuLine, own: fixedOwn, postgres: fixedPostgres } = fixedCost;
  const { line: burstCpuLine, own: burstOwn, postgres: burstPostgres, sandbox: burstSandbox } = burstCost;

  // References, measured now, on the same machine, with the system idle.
  // 16 clients, as bench:ingest: more clients only queue on the one serie's counter row (lower tps).
  const pgbench = await pgbenchPaymentShape({
    clients: 16,
    seconds: Math.min(10, seconds),
    serverUrl: postgres.serverUrl,
  });
  const raw = rawVerifySignRate(2);
  const wake = await wakeUpCosts();
  // A stamped payment is one BullMQ job: BullMQ's own commands for one, at the same rate and
  // concurrency, are the floor Timbra's Redis commands stand on (a few seconds of jobs each).
  const jobShape = { concurrency: workerConcurrency, latencyMs, batch: RELAY_BATCH_SIZE };
  const bullmqFixed = await bullmqCommandsPerJob({ ...jobShape, rate, jobs: Math.min(rate * seconds, rate * 5) });
  const bullmqSaturated = await bullmqCommandsPerJob({
    ...jobShape,
    jobs: Math.min(5_000, Math.round((3 * workerConcurrency * 1000) / latencyMs)),
  });
  const beyond = (timbra: number, bullmq: number) => {
    const d = timbra - bullmq;
    return `${d < 0 ? '−' : '+'}${Math.abs(d).toFixed(1)}`;
  };
  const latencyBound = workerConcurrency / (latencyMs / 1000);
  const ceilings = {
    'pgbench, payment transaction': pgbench,
    'raw RSA verify + sign (1 core)': raw,
    'worker concurrency / PAC latency': latencyBound,
  };
  const [lowestName, lowest] = Object.entries(ceilings).sort((a, b) => a[1] - b[1])[0]!;
  const share = burstResult.sustained / lowest;
  const relayOk = fixedResult.relay.p99 < 50;
  // The PAC sandbox is a test tool: it must never be what limits a benchmark. One of its cores
  // stamps 1000 / (its CPU a stamp) a second; it needs twice what this run drove.
  const sandboxCapacity = 1000 / burstSandbox;
  const sandboxHeadroom = sandboxCapacity / burstResult.sustained;
  const f = (n: number) => n.toFixed(0).padStart(6);
  out(
    [
      `bench:e2e — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
      `API + relay + stamping worker (concurrency ${workerConcurrency}) + PAC sandbox answering after ${latencyMs} ms (validating the SAT rules, not the XSD); signed Stripe webhooks; ${seconds} s a phase; ${Number(values.history).toLocaleString('en')} invoices of history`,
      '',
      `  idle ${idleSeconds} s: CPU ms per second: ${idleLine}`,
      `  fixed ${rate}/s: ${fixedResult.stamped}/${fixedResult.sent} stamped, sustained ${fixedResult.sustained.toFixed(0)}/s`,
      `    webhook → stamped   p50 ${f(fixedResult.latency.p50)} ms   p95 ${f(fixedResult.latency.p95)} ms   p99 ${f(fixedResult.latency.p99)} ms`,
      `    relay (2xx → job active, NOTIFY)   p50 ${fixedResult.relay.p50.toFixed(0)} ms   p99 ${fixedResult.relay.p99.toFixed(0)} ms   (target p99 < 50 ms)  ${relayOk ? 'OK' : 'MISSED'}`,
      `      of which 2xx → job added (the relay)   p50 ${fixedResult.added.p50.toFixed(0)} ms   p99 ${fixedResult.added.p99.toFixed(0)} ms`,
      `      and job added → active (a worker takes it)   p50 ${fixedResult.pickup.p50.toFixed(0)} ms   p99 ${fixedResult.pickup.p99.toFixed(0)} ms`,
      `    CPU ms per stamped payment: ${fixedCpuLine}`,
      `    the machine: a fixed piece of work (the canary) took ${fixedMachine.toFixed(0)} µs of CPU   ← reference (--compare divides each run's CPU by it)`,
      `    the machine busy ${(fixedBusy * 100).toFixed(0)}% of its ${cpus().length} cores${fixedBusy > 0.8 ? ` — ${rate}/s is near what this machine can take: its latencies, the relay's too, are queueing for a core` : ''}`,
      ...(rate === 100
        ? [
            `    Redis commands per stamped payment: ${fixedResult.redisCommands.line}   (target at 100/s ≤ 30)  ${fixedResult.redisCommands.total <= 30 ? 'OK' : 'MISSED'}`,
            `      BullMQ's own for one job, the same rate and concurrency: ${bullmqFixed.line}   ← reference; Timbra's beyond it ${beyond(fixedResult.redisCommands.total, bullmqFixed.total)}`,
            `    Postgres commits per stamped payment: ${fixedResult.postgresCommits.toFixed(1)}   (target at 100/s ≤ 3)  ${fixedResult.postgresCommits <= 3 ? 'OK' : 'MISSED'}`,
          ]
        : [
            `    Redis commands per stamped payment: ${fixedResult.redisCommands.line}; Postgres commits ${fixedResult.postgresCommits.toFixed(1)}   (targets at 100/s; this run ${rate}/s)`,
            `      BullMQ's own for one job, the same rate and concurrency: ${bullmqFixed.line}   ← reference; Timbra's beyond it ${beyond(fixedResult.redisCommands.total, bullmqFixed.total)}`,
          ]),
      ...fixedResult.statements.lines.map((line) => `    ${line}`),
      `    Timbra's own (API, relay, stamper, Postgres, Redis): ${fixedOwn.toFixed(2)} ms, of which Postgres ${fixedPostgres.toFixed(2)} ms   (target: ≤ 0.6× a baseline commit's, in alternating runs: --compare)`,
      `  as fast as ${senders} senders go: ${burstResult.stamped}/${burstResult.sent} stamped, sustained ${burstResult.sustained.toFixed(0)} stamped/s`,
      `    webhook → stamped   p50 ${f(burstResult.latency.p50)} ms   p95 ${f(burstResult.latency.p95)} ms   p99 ${f(burstResult.latency.p99)} ms`,
      `    relay (2xx → job active)   p50 ${burstResult.relay.p50.toFixed(0)} ms   p99 ${burstResult.relay.p99.toFixed(0)} ms (2xx → added p99 ${burstResult.added.p99.toFixed(0)} ms: jobs wait for a free worker slot)`,
      `    CPU ms per stamped payment: ${burstCpuLine}`,
      `    the machine: a fixed piece of work (the canary) took ${burstMachine.toFixed(0)} µs of CPU   ← reference (--compare divides each run's CPU by it)`,
      `    Redis commands per stamped payment: ${burstResult.redisCommands.line}   (target saturated ≤ 20)  ${burstResult.redisCommands.total <= 20 ? 'OK' : 'MISSED'}`,
      `      BullMQ's own for one job, added in the relay's batches, the same concurrency: ${bullmqSaturated.line}   ← reference; Timbra's beyond it ${beyond(burstResult.redisCommands.total, bullmqSaturated.total)}`,
      `    Postgres commits per stamped payment: ${burstResult.postgresCommits.toFixed(1)}`,
      ...burstResult.statements.lines.map((line) => `    ${line}`),
      `    Timbra's own (API, relay, stamper, Postgres, Redis): ${burstOwn.toFixed(2)} ms, of which Postgres ${burstPostgres.toFixed(2)} ms   (targets: ≤ 0.6× and Postgres ≤ 0.45× a baseline commit's, in alternating runs: --compare)`,
      '',
      ...(one && platformSetup
        ? [
            `  platform mode: ${paths.length} organizations (made in ${platformSetup.madeSeconds.toFixed(1)} s; the first payment of each stamped in ${platformSetup.warmSeconds.toFixed(1)} s). The figures above: payments spread over all of them; here beside every payment to one:`,
            `    fixed ${rate}/s, webhook → stamped p99: one ${one.fixedResult.latency.p99.toFixed(0)} ms ← reference, spread ${fixedResult.latency.p99.toFixed(0)} ms; Timbra's own CPU a payment: one ${one.fixedCost.own.toFixed(2)} ms, spread ${fixedOwn.toFixed(2)} ms`,
            `    saturated: one ${one.burstResult.sustained.toFixed(0)} stamped/s ← reference, spread ${burstResult.sustained.toFixed(0)} stamped/s = ${((100 * burstResult.sustained) / one.burstResult.sustained).toFixed(1)}%   (target ≥ 90%)  ${burstResult.sustained >= 0.9 * one.burstResult.sustained ? 'OK' : 'MISSED'}; Timbra's own CPU a payment: one ${one.burstCost.own.toFixed(2)} ms, spread ${burstOwn.toFixed(2)} ms`,
            '',
          ]
        : []),
      ...Object.entries(ceilings).map(([name, v]) => `  ceiling: ${name.padEnd(34)} ${f(v)}/s   ← reference`),
      `  a wake-up after 10 ms asleep: a timer ${wake.timer.toFixed(2)} ms of CPU; a Postgres round trip ${wake.roundTrip.toFixed(2)} ms more (client + backend)   ← reference (the steady figure is mostly such wake-ups)`,
      '',
      `  sustained / lowest ceiling (${lowestName}) = ${(share * 100).toFixed(1)}%   (target ≥ 40%)  ${share >= 0.4 ? 'OK' : 'MISSED'}`,
      `  the PAC sandbox: ${burstSandbox.toFixed(2)} ms of CPU a stamp, so one core stamps ${sandboxCapacity.toFixed(0)}/s = ${sandboxHeadroom.toFixed(1)}× the ${burstResult.sustained.toFixed(0)}/s this run drove   (target ≥ 2×: a test tool never the limit)  ${sandboxHeadroom >= 2 ? 'OK' : 'MISSED'}`,
      '',
    ].join('\n'),
  );
  if (values.json) {
    const figures: E2eFigures = {
      tree,
      fixed: {
        rate,
        stamped: fixedResult.stamped,
        ownMs: fixedOwn,
        postgresMs: fixedPostgres,
        redisCommands: fixedResult.redisCommands.total,
        bullmqCommands: bullmqFixed.total,
        postgresCommits: fixedResult.postgresCommits,
        statements: fixedResult.statements.total,
        canaryUs: fixedMachine,
      },
      saturated: {
        stamped: burstResult.stamped,
        perSecond: burstResult.sustained,
        ownMs: burstOwn,
        postgresMs: burstPostgres,
        redisCommands: burstResult.redisCommands.total,
        bullmqCommands: bullmqSaturated.total,
        postgresCommits: burstResult.postgresCommits,
        statements: burstResult.statements.total,
        canaryUs: burstMachine,
      },
    };
    writeFileSync(values.json, `${JSON.stringify(figures, null, 2)}\n`);
  }
  exitCode = 0;
} catch (error) {
  out(`bench:e2e FAILED: ${(error as Error).message}`);
  for (const p of processes) if (p.tail.length > 0) out(`${p.name}:\n  ${p.tail.slice(-8).join('\n  ')}`);
} finally {
  await prisma.$disconnect();
  redis.disconnect();
  jobTimes.stopped = true;
  eventsReader.disconnect();
  agent.destroy();
  canary.stop();
  // The apps first, then Redis: a worker closing against a Redis already gone waits for it until it
  // is killed, and a process killed writes no CPU profile (TIMBRA_CPU_PROF_DIR).
  const [redisProcess, ...apps] = processes;
  await Promise.all(apps.map((p) => p.stop('SIGTERM')));
  await redisProcess?.stop('SIGTERM');
  await database.drop().catch(() => undefined);
  await postgres.proc.stop('SIGTERM');
  postgres.remove();
}
process.exit(exitCode);
