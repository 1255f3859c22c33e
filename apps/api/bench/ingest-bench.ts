/**
 * `npm run bench:ingest [-- --seconds S --concurrency C --instances M --series K --tickets --database-url URL --json]` — committed payments per second through
 * signed Stripe webhooks into the running API (its own process, one serie), with latency p50/p99,
 * beside the TPS pgbench reaches in the same run for a transaction of the same shape on the same
 * Postgres (serie counter update + payment insert + invoice with a ~3 KB XML + outbox insert).
 * Target: ingest ≥ 50% of the pgbench figure. Also prints the CPU each payment cost the API, Postgres
 * and the load generator (Linux /proc), to show where the machine's two cores went.
 *
 * The API records deliveries that arrive together in one transaction (group commit), so it can beat
 * pgbench's one-transaction-per-payment figure; INGEST_BATCH_MAX / INGEST_TRANSACTIONS in the
 * environment reach the API process (INGEST_BATCH_MAX=1 measures one transaction per payment).
 *
 * `--instances M --series K`: M API processes on the one database, instance i issuing in serie
 * A<i mod K> — how ingest scales with API instances and with series (the folio counter is one row a
 * serie, updated by every payment of that serie).
 * `--tickets`: the API in global mode (`PUBLICO_GENERAL_MODE=global`), so each payment — none names
 * its customer — is recorded as a ticket (no CFDI frozen: under the period's shared advisory lock
 * instead of the serie's counter), and "committed" counts tickets. Then the period is closed as an
 * operator would (`POST /v1/globals`) and the time and CPU to build, freeze and write its facturas
 * globales (one per `GLOBAL_MAX_CONCEPTOS` tickets) are printed.
 * `--database-url` runs the API on an existing (migrated) database and leaves it there (bench:history
 * measures with millions of rows of history that way); `--json` prints one JSON line of the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import got from 'got';
import pg from 'pg';
import { cpuMs, freePort, percentile, tsEntryArgs } from '@timbra/test-support';
import { createTestDatabase, pgbenchPaymentShape } from '@timbra/db/testing';
import { paymentIntentSucceeded, STRIPE_SECRET, stripeDelivery } from '../test/helpers.ts';
import { makeStripeOrganizations } from '@timbra/test-support';
import { printPlatform, rssMiB, type IngestFigures, type PlatformFigures } from './platform-ingest.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    'database-url': { type: 'string' },
    json: { type: 'boolean', default: false },
    /** API processes on the one database; the senders are spread over them. */
    instances: { type: 'string', default: '1' },
    /** Series the payments go to (instance i issues in serie A<i mod series>): the folio counter is one row a serie. */
    series: { type: 'string', default: '1' },
    /** Global mode: payments become tickets, then their period's globals are issued. */
    tickets: { type: 'boolean', default: false },
    /** Platform mode: K organizations, the payments spread over them, against all sent to one of them. */
    organizations: { type: 'string' },
  },
});
const tickets = values.tickets;
const instances = Number(values.instances);
const seriesCount = Number(values.series);
if (!(instances >= 1 && seriesCount >= 1 && seriesCount <= instances))
  throw new Error('--instances ≥ 1 and 1 ≤ --series ≤ --instances (a serie is an API setting, SERIE_INGRESO)');
const organizationCount = values.organizations === undefined ? 0 : Number(values.organizations);
if (organizationCount && (!(organizationCount >= 2) || instances > 1 || tickets))
  throw new Error('--organizations K: K ≥ 2, one API instance, not with --tickets');
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const here = dirname(fileURLToPath(import.meta.url));

// The load generator speaks node:http on a keep-alive agent: a heavier client (got costs ~0.5 ms
// of CPU a request) would take CPU from the API and Postgres on this small machine.
const agent = new http.Agent({ keepAlive: true });
function post(port: number, path: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolvePost, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolvePost(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * An id like Stripe's (`pi_` and 24 characters) in no order, as Stripe's are to an index: the unique
 * indexes on the provider's payment and event ids take each insert at a random page, as in production
 * (an increasing id would always append to their last page). Hex, as bench:history's ids of the same
 * kind, so both spread over the same keys.
 */
function stripeLikeId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

// --- The API under load -------------------------------------------------------------------------
const given = values['database-url'];
const apiDb = given ? { url: given, drop: () => Promise.resolve() } : await createTestDatabase();
/** One number read from the API's database, on a connection of its own (the API's pool is not ours). */
async function readNumber(sql: string): Promise<number> {
  const client = new pg.Client({ connectionString: apiDb.url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql)).rows[0]!.n);
  } finally {
    await client.end();
  }
}
/** What a committed payment leaves: its outbox row, or in global mode its ticket. */
const committedRows = () => readNumber(`SELECT count(*) AS n FROM ${tickets ? 'tickets' : 'outbox'}`);
const committedBefore = given ? await committedRows() : 0;
/** The server's write-ahead log position, in bytes: WAL a payment costs, full-page images included. */
const walBytes = () => readNumber(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS n`);
// An admin key for closing the period (`POST /v1/globals`), made for this run.
const adminKey = `bench-admin-${randomBytes(12).toString('hex')}`;
// Platform mode: the key that makes the organizations, the master key sealing their CSDs and secrets.
const PLATFORM = {
  PLATFORM_KEY: `bench-platform-${randomBytes(16).toString('hex')}`,
  VAULT_KEYS: `bench:${randomBytes(32).toString('base64')}`,
};
const ports: number[] = [];
const children: ChildProcess[] = [];
for (let i = 0; i < instances; i++) {
  const port = await freePort();
  ports.push(port);
  children.push(
    spawn(process.execPath, tsEntryArgs(resolve(here, '../src/main.ts'), `api-${i + 1}`), {
      env: {
        ...process.env,
        TIMBRA_PROFILE: 'sandbox',
        DATABASE_URL: apiDb.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        METRICS_PORT: '0',
        SERIE_INGRESO: seriesCount > 1 ? `A${i % seriesCount}` : 'A',
        STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
        // payment_intent.succeeded without a charge to read: no call reaches Stripe's API.
        STRIPE_API_KEY: 'sk_test_bench_unused',
        // Hand-built PaymentIntents made by no Checkout Session: no session to look up at Stripe.
        STRIPE_LINE_ITEMS: 'false',
        LOG_LEVEL: 'error',
        RATE_LIMIT_PER_MINUTE: '10000000',
        DATABASE_POOL_SIZE: String(Math.max(2, Math.min(Math.ceil(concurrency / instances), 20))),
        ...(organizationCount ? PLATFORM : {}),
        ...(tickets
          ? {
              PUBLICO_GENERAL_MODE: 'global',
              API_KEYS: `bench:${adminKey}:admin`,
            }
          : {}),
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
  );
}
const apiCpu = () => children.reduce((sum, c) => sum + cpuMs({ pid: c.pid }), 0);
async function stopApi(): Promise<void> {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await apiDb.drop();
}

/** Drives the API with signed webhooks; returns committed payments/s and latencies. */
async function measureIngest(paths: readonly string[] = ['/webhooks/stripe']): Promise<IngestFigures> {
  // Deliveries are signed before the clock starts, so signing is not what is measured.
  const deliveries = Array.from({ length: Math.max(2000, concurrency * seconds * 400) }, () =>
    stripeDelivery(paymentIntentSucceeded({ id: stripeLikeId('pi'), eventId: stripeLikeId('evt') })),
  );
  const latencies: number[] = [];
  let next = 0;
  const deadline = Date.now() + seconds * 1000;
  const wal0 = await walBytes();
  const cpu0 = { api: apiCpu(), postgres: cpuMs({ comm: 'postgres' }), load: process.cpuUsage() };
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, sender) => {
      const port = ports[sender % ports.length]!;
      while (Date.now() < deadline && next < deliveries.length) {
        const i = next++;
        const d = deliveries[i]!;
        const t0 = process.hrtime.bigint();
        await post(port, paths[i % paths.length]!, d.body, { 'stripe-signature': d.signature });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  const loadCpu = process.cpuUsage(cpu0.load);
  const cpu = {
    api: apiCpu() - cpu0.api,
    postgres: cpuMs({ comm: 'postgres' }) - cpu0.postgres,
    load: (loadCpu.user + loadCpu.system) / 1000,
  };
  const committed = (await committedRows()) - committedBefore;
  const walPerPayment = ((await walBytes()) - wal0) / committed;
  latencies.sort((a, b) => a - b);
  return {
    rate: committed / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    committed,
    cpu,
    walPerPayment,
  };
}

interface Issued {
  /** Tickets that went into a global, and the globals (parts) they made. */
  tickets: number;
  globals: number;
  seconds: number;
  cpu: { api: number; postgres: number };
}
/**
 * Global mode: closes every period the run's tickets fell in (one, unless the run crossed the
 * emisor's local midnight) through the API, as an operator would, and times it.
 */
async function issueGlobals(): Promise<Issued> {
  const client = new pg.Client({ connectionString: apiDb.url });
  await client.connect();
  try {
    const periods = (
      await client.query<{ starts_on: string }>(
        `SELECT DISTINCT to_char(period_starts_on, 'YYYY-MM-DD') AS starts_on FROM tickets WHERE status = 'open' ORDER BY 1`,
      )
    ).rows.map((r) => r.starts_on);
    const cpu0 = { api: apiCpu(), postgres: cpuMs({ comm: 'postgres' }) };
    const start = process.hrtime.bigint();
    for (const startsOn of periods) {
      const response = await got.post(`http://127.0.0.1:${ports[0]!}/v1/globals`, {
        headers: { authorization: `Bearer ${adminKey}` },
        json: { startsOn },
        throwHttpErrors: false,
        timeout: { request: 600_000 },
      });
      if (response.statusCode !== 201)
        throw new Error(`POST /v1/globals ${startsOn}: ${response.statusCode} ${response.body}`);
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const cpu = { api: apiCpu() - cpu0.api, postgres: cpuMs({ comm: 'postgres' }) - cpu0.postgres };
    const counted = (
      await client.query<{ tickets: string; globals: string; open: string }>(
        `SELECT count(*) FILTER (WHERE status = 'in_global') AS tickets,
                count(DISTINCT invoice_id) FILTER (WHERE status = 'in_global') AS globals,
                count(*) FILTER (WHERE status = 'open') AS open
           FROM tickets`,
      )
    ).rows[0]!;
    if (Number(counted.open) > 0) throw new Error(`${counted.open} tickets still open after the globals`);
    return { tickets: Number(counted.tickets), globals: Number(counted.globals), seconds, cpu };
  } finally {
    await client.end();
  }
}

async function waitHealthy(): Promise<void> {
  for (const port of ports)
    for (let i = 0; ; i++) {
      try {
        await got.get(`http://127.0.0.1:${port}/healthz`, { retry: { limit: 0 } });
        break;
      } catch {
        if (i > 150) throw new Error('api did not start');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
}

/** Platform mode: K organizations made, each one's API warmed by a first delivery, then one against K. */
async function measurePlatform(): Promise<PlatformFigures> {
  const apiUrl = `http://127.0.0.1:${ports[0]!}`;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const made = await makeStripeOrganizations({
    apiUrl,
    platformKey: PLATFORM.PLATFORM_KEY,
    count: organizationCount,
    secret: STRIPE_SECRET,
    log,
  });
  const before = rssMiB(children[0]!.pid!);
  const t0 = Date.now();
  const paths = made.organizations.map((o) => o.path);
  for (const path of paths) {
    const d = stripeDelivery(paymentIntentSucceeded({ id: stripeLikeId('pi'), eventId: stripeLikeId('evt') }));
    const status = await post(ports[0]!, path, d.body, { 'stripe-signature': d.signature });
    if (status !== 200) throw new Error(`the first delivery to ${path}: HTTP ${status}`);
  }
  const warmSeconds = (Date.now() - t0) / 1000;
  const after = rssMiB(children[0]!.pid!);
  log(`  ${paths.length} organizations warmed in ${warmSeconds.toFixed(1)} s; measuring one, then ${paths.length}`);
  const one = await measureIngest([paths[0]!]);
  const many = await measureIngest(paths);
  return {
    organizations: organizationCount,
    makeSeconds: made.seconds,
    warmSeconds,
    rssMiB: { before, after },
    one,
    many,
  };
}

let ingest: Awaited<ReturnType<typeof measureIngest>>;
let issued: Issued | undefined;
let platform: Awaited<ReturnType<typeof measurePlatform>> | undefined;
try {
  await waitHealthy();
  if (organizationCount) {
    platform = await measurePlatform();
    ingest = platform.many;
  } else ingest = await measureIngest();
  if (tickets) issued = await issueGlobals();
} finally {
  await stopApi();
}
if (platform) {
  if (values.json) process.stdout.write(`${JSON.stringify(platform)}\n`);
  else process.stdout.write(printPlatform(platform, seconds, concurrency));
  process.exit(0);
}
const { rate: ingestRate, p50, p99, committed, cpu, walPerPayment } = ingest;

// --- pgbench on the same Postgres, same transaction shape --------------------------------------
// (With --json the caller compares runs of its own: no pgbench.)
if (values.json) {
  process.stdout.write(
    `${JSON.stringify({ ingestRate, p50, p99, committed, cpu, walPerPayment, instances, series: seriesCount, tickets, issued })}\n`,
  );
  process.exit(0);
}
const pgbenchTps = await pgbenchPaymentShape({ clients: concurrency, seconds });

const share = ingestRate / pgbenchTps;
const what = tickets ? 'tickets' : 'payments';
process.stdout.write(
  [
    `bench:ingest — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
    `${seconds} s, ${concurrency} concurrent senders, signed Stripe payment_intent.succeeded webhooks, ${instances} API process(es), ${
      tickets ? 'global mode: each payment a ticket' : `${seriesCount} serie(s)`
    }`,
    '',
    `  ${`ingest (API, committed ${what})`.padEnd(35)}${ingestRate.toFixed(0).padStart(7)} ${what}/s   (${committed} committed)`,
    `  latency                            p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    `  CPU per payment                    API ${(cpu.api / committed).toFixed(2)} ms, Postgres ${(cpu.postgres / committed).toFixed(2)} ms, load generator ${(cpu.load / committed).toFixed(2)} ms`,
    `  WAL per payment                    ${(walPerPayment / 1024).toFixed(1)} KiB`,
    `  pgbench, same transaction shape    ${pgbenchTps.toFixed(0).padStart(7)} tps   ← reference${
      tickets ? ' (a payment with its invoice and outbox row: heavier than a ticket)' : ''
    }`,
    '',
    `  ingest / pgbench = ${(share * 100).toFixed(1)}%   (target ≥ 50%)  ${share >= 0.5 ? 'OK' : 'MISSED'}`,
    ...(issued
      ? [
          '',
          `  the period closed (POST /v1/globals): ${issued.tickets} tickets in ${issued.globals} factura(s) global(es), built, frozen and written in ${issued.seconds.toFixed(2)} s`,
          `    CPU per ticket: API ${(issued.cpu.api / issued.tickets).toFixed(3)} ms, Postgres ${(issued.cpu.postgres / issued.tickets).toFixed(3)} ms`,
        ]
      : []),
    '',
  ].join('\n'),
);
