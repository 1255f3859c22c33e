/**
 * `npm run bench:ingest [-- --seconds S --concurrency C --instances M --series K --database-url URL --json]` — committed payments per second through
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
 * `--database-url` runs the API on an existing (migrated) database and leaves it there (bench:history
 * measures with millions of rows of history that way); `--json` prints one JSON line of the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
  },
});
const instances = Number(values.instances);
const seriesCount = Number(values.series);
if (!(instances >= 1 && seriesCount >= 1 && seriesCount <= instances))
  throw new Error('--instances ≥ 1 and 1 ≤ --series ≤ --instances (a serie is an API setting, SERIE_INGRESO)');
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

// --- The API under load -------------------------------------------------------------------------
const given = values['database-url'];
const apiDb = given ? { url: given, drop: () => Promise.resolve() } : await createTestDatabase();
const outboxRows = async () => {
  const client = new pg.Client({ connectionString: apiDb.url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM outbox')).rows[0]!.n);
  } finally {
    await client.end();
  }
};
const outboxBefore = given ? await outboxRows() : 0;
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
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    }),
  );
}
const apiCpu = () => children.reduce((sum, c) => sum + cpuMs({ pid: c.pid }), 0);
/** Drives the API with signed webhooks; returns committed payments/s and latencies. */
async function measureIngest(): Promise<{
  rate: number;
  p50: number;
  p99: number;
  committed: number;
  cpu: { api: number; postgres: number; load: number };
}> {
  try {
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
    // Deliveries are signed before the clock starts, so signing is not what is measured.
    const deliveries = Array.from({ length: Math.max(2000, concurrency * seconds * 400) }, () =>
      stripeDelivery(paymentIntentSucceeded()),
    );
    const latencies: number[] = [];
    let next = 0;
    const deadline = Date.now() + seconds * 1000;
    const cpu0 = { api: apiCpu(), postgres: cpuMs({ comm: 'postgres' }), load: process.cpuUsage() };
    const start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: concurrency }, async (_, sender) => {
        const port = ports[sender % ports.length]!;
        while (Date.now() < deadline && next < deliveries.length) {
          const d = deliveries[next++]!;
          const t0 = process.hrtime.bigint();
          await post(port, '/webhooks/stripe', d.body, { 'stripe-signature': d.signature });
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
    const committed = (await outboxRows()) - outboxBefore;
    latencies.sort((a, b) => a - b);
    return {
      rate: committed / elapsed,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      committed,
      cpu,
    };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await apiDb.drop();
  }
}
const { rate: ingestRate, p50, p99, committed, cpu } = await measureIngest();

// --- pgbench on the same Postgres, same transaction shape --------------------------------------
// (With --json the caller compares runs of its own: no pgbench.)
if (values.json) {
  process.stdout.write(`${JSON.stringify({ ingestRate, p50, p99, committed, cpu, instances, series: seriesCount })}\n`);
  process.exit(0);
}
const pgbenchTps = await pgbenchPaymentShape({ clients: concurrency, seconds });

const share = ingestRate / pgbenchTps;
process.stdout.write(
  [
    `bench:ingest — ${new Date().toISOString()} — ${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}`,
    `${seconds} s, ${concurrency} concurrent senders, signed Stripe payment_intent.succeeded webhooks, ${instances} API process(es), ${seriesCount} serie(s)`,
    '',
    `  ingest (API, committed payments)   ${ingestRate.toFixed(0).padStart(7)} payments/s   (${committed} committed)`,
    `  latency                            p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    `  CPU per payment                    API ${(cpu.api / committed).toFixed(2)} ms, Postgres ${(cpu.postgres / committed).toFixed(2)} ms, load generator ${(cpu.load / committed).toFixed(2)} ms`,
    `  pgbench, same transaction shape    ${pgbenchTps.toFixed(0).padStart(7)} tps   ← reference`,
    '',
    `  ingest / pgbench = ${(share * 100).toFixed(1)}%   (target ≥ 50%)  ${share >= 0.5 ? 'OK' : 'MISSED'}`,
    '',
  ].join('\n'),
);
