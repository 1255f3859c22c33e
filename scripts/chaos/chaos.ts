/**
 * `npm run chaos -- [--payments N] [--duration S] [--seed X] [--postgres private|shared] [--organizations 1-3] [--variant naive] [--expect-violations] [--out DIR]`
 *
 * Proves the product's promise under the faults production has, with real processes on loopback:
 * the pac-sandbox (primary + backup), the API, two workers (one relay + sweeper + stamper, one
 * stamper), a private redis-server (killed once and restarted empty) and a private Postgres cluster
 * (initdb; crashed once with SIGKILL and restarted through crash recovery) — or, with
 * `--postgres shared`, a fresh database on $TEST_DATABASE_URL's server, never restarted. It makes N
 * payments happen — at the provider sandbox's Stripe (card, OXXO and SPEI payments; ~10% authorized
 * and captured later, some for less, a few never; their signed events of the current API version
 * delivered out of order, ~30% again) and Mercado Pago (id-only notifications the API must fetch),
 * and REST payments with Idempotency-Key retried after client-side timeouts — Stripe refunds of
 * ~10% of the Stripe payments (each an Egreso; a few fail, which must get none), and the
 * cancellation of ~2% of the invoices (through the API, followed at the SAT), while the sandbox
 * injects errors before processing, stamp-then-drop on the primary, an outage of the primary and
 * latency, and while workers are SIGKILLed and restarted. Then it waits for the outbox to drain (no
 * Egreso waiting, no cancellation in process) and checks, from the database and the sandbox's
 * ledger: no lost webhook, every payment with exactly one stamped Ingreso (for the captured amount),
 * no uncaptured authorization invoiced, every succeeded refund with exactly one stamped Egreso
 * related to it, no failed refund recorded, every cancellation done once (and nothing else
 * cancelled), no orphan stamp, no duplicate, no folio gap in any serie, no frozen XML changed after
 * its first send, no dead letter.
 *
 * Corrections and replacements (product variant): some REST payments name a customer whose name
 * differs from the SAT's (the sandbox's registry rejects it: a dead letter), and are corrected with
 * PATCH once rejected; others are corrected while they are being stamped — the API runs with
 * LATE_MARGIN_HOURS=72 so a pending invoice is correctable at once, racing the primary's
 * stamp-then-drop — and ~2% of the stamped REST invoices are replaced (TipoRelacion 04, the original
 * cancelled with motivo 01). Checked too: every payment's live Ingreso (the one not replaced) stamped
 * once, at most one version of any invoice stamped in the PACs' ledger, no stamp of a superseded
 * version, every replaced original cancelled once in favour of its stamped replacement.
 *
 * Emails and webhooks (#19): every payment of ~half the Stripe and Mercado Pago ones and every REST
 * one carries the customer's address; a webhook endpoint receives every event. The SMTP server (a
 * real one, smtp-server) drops ~10% of the connections mid-message and defers ~10% (451); the
 * receiver answers ~10% with 500 and leaves ~5% unanswered (timeout). Checked: every stamped invoice's
 * invoice.stamped webhook and email (when it has an address) arrived at least once, none for an
 * invoice never stamped, every signature verifies, no delivery dead or left open.
 *
 * Público en general in global mode (#20): a second API over the same database runs with
 * PUBLICO_GENERAL_MODE=global, and the workers' close timer runs every second. ~N/10 sales at its till without the
 * customer (tickets) are dated one to three days back, so their periods have ended and their globals
 * are issued within a second; ~40% are self-invoiced on /facturar (form and CSRF cookie, as a browser)
 * 0–1.5 s later, racing the close, and ~20% refunded 0–3 s later, in part or in full, before or after
 * their global; what is left open at the end is closed with POST /v1/globals. Checked: every ticket in
 * exactly one stamped document (its own CFDI and no global, or its global and no CFDI of its own;
 * none when refunded in full before), no period issued twice, every global stamped with a Total equal
 * to its tickets' sum after refunds, every ticket refund either before its global (no Egreso) or with
 * one stamped Egreso related to the ticket's document.
 *
 * Platform mode (#46), `--organizations 3` by default: the API serves two more organizations, made
 * through /v1/organizations with their CSDs, keys and webhook endpoints (organizations.ts); the REST
 * payments go round the three, each with its own key. Checked: every invariant per organization,
 * each invoice's webhooks at its own organization's endpoint, and no row of one listed or read with
 * another's keys.
 *
 * The SAT's record (#48): the table's last rows are each organization reconciled with the sandbox's
 * Descarga Masiva through `npm run ops -- reconcile --source sat` — 0 orphans, 0 missing, 0 status
 * differences (sat-record.ts). Before them, with the workers held, an orphan is planted (a payment
 * made, its frozen XML stamped at the primary with the answer dropped and never retried), and one
 * reconciliation must adopt it: the invoice stamped with the PAC's UUID, its outbox row done.
 *
 * Prints the table; writes it as JSON and Markdown to --out (default .chaos/<time>); exits 1 when an
 * invariant fails. `--variant naive` runs a deliberately broken stamper instead of the workers
 * (failover on any error, fresh keys, no transaction): with `--expect-violations` the run succeeds
 * only if the harness catches it (orphans or duplicates).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createTimbra, verifyWebhook, WebhookSignatureError } from '@timbra/client';
import { createPrisma } from '@timbra/db';
import { createTestDatabase } from '@timbra/db/testing';
import { ProviderSandboxClient } from '@timbra/provider-client';
import {
  freePort,
  freePorts,
  providerSandboxEnv,
  providerSecrets,
  startMailbox,
  testCaFile,
  testCsdPaths,
} from '@timbra/test-support';
import { privatePostgres, privateRedis, Proc, reportUnexpectedExits, ROOT, until } from '../lib/processes.ts';
import {
  crossings,
  makeOrganizations,
  MAX_ORGANIZATIONS,
  perOrganization,
  type ChaosOrganization,
  type Figure,
} from './organizations.ts';
import { adoptionFigure, plantOrphan, satRecordFigures } from './sat-record.ts';
import { waitWhileMoving, type Left } from './waiting.ts';

const { values } = parseArgs({
  options: {
    payments: { type: 'string', default: '200' },
    duration: { type: 'string', default: '60' },
    seed: { type: 'string', default: '42' },
    variant: { type: 'string', default: 'product' },
    postgres: { type: 'string', default: 'private' },
    organizations: { type: 'string', default: '3' },
    'expect-violations': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const N = Number(values.payments);
const durationS = Number(values.duration);
const seed = Number(values.seed);
const naive = values.variant === 'naive';
if (!['product', 'naive'].includes(values.variant)) throw new Error('--variant is product or naive');
if (!['private', 'shared'].includes(values.postgres)) throw new Error('--postgres is private or shared');
// Platform mode: the home organization (EMISOR_*) and up to two more, made through /v1/organizations.
// The naive stamper knows one emisor's CSD only: it runs one organization.
const O = naive ? 1 : Number(values.organizations);
if (!Number.isInteger(O) || O < 1 || O > MAX_ORGANIZATIONS)
  throw new Error(`--organizations is 1 to ${MAX_ORGANIZATIONS}`);

/** The SAT test taxpayer CACX7605101P8 as the sandbox's registry has it. */
const XOCHILT = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  codigoPostal: '36257',
  regimenFiscal: '612',
  usoCfdi: 'G03',
};

// Seeded choices, so a run's plan (duplicates, delays, kinds) can be repeated.
let s = seed >>> 0;
const random = () => {
  s = (s + 0x6d2b79f5) >>> 0;
  let t = Math.imul(s ^ (s >>> 15), s | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
// The delivery faults' own sequence, so they do not shift the plan's.
let d = (seed * 7919) >>> 0;
const deliveryRandom = () => {
  d = (d + 0x6d2b79f5) >>> 0;
  let t = Math.imul(d ^ (d >>> 15), d | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const log = (line: string) =>
  process.stdout.write(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const started = Date.now();

// --- The system -------------------------------------------------------------------------------
const secrets = { ...providerSecrets('chaos'), apiKey: `chaos-${randomUUID()}`, adminKey: `chaos-ops-${randomUUID()}` };

// The customers' SMTP server and the merchant's webhook receiver, both unreliable: the SMTP server
// drops ~10% of the connections mid-message and answers ~10% with 451 (try later); the receiver
// answers ~10% with 500 and leaves ~5% without an answer (the worker's 1 s timeout).
const mailbox = await startMailbox({
  decide: () => {
    const r = deliveryRandom();
    return r < 0.1 ? 'drop' : r < 0.2 ? { code: 451, message: 'try again later' } : 'accept';
  },
});
const hooks = {
  /** Each organization's endpoint secret, by its path (`/hooks`: the home one's; `/hooks/<tag>`). */
  secrets: new Map<string, string>(),
  requests: [] as {
    eventId: string;
    type: string;
    invoiceId: string | null;
    verified: boolean;
    answered: number;
    path: string;
  }[],
};
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '';
    // Checked as an integrator checks it: @timbra/client's verifier, with the endpoint's secret.
    let verified = true;
    try {
      verifyWebhook(body, req.headers['timbra-signature'] as string | undefined, hooks.secrets.get(path) ?? '-');
    } catch (error) {
      if (!(error instanceof WebhookSignatureError)) throw error;
      verified = false;
    }
    const event = JSON.parse(body) as { id: string; type: string; data: { object: { id?: string } } };
    const r = deliveryRandom();
    const answer = r < 0.05 ? 0 : r < 0.15 ? 500 : 200;
    hooks.requests.push({
      eventId: event.id,
      type: event.type,
      invoiceId: event.type.startsWith('invoice.') ? (event.data.object.id ?? null) : null,
      verified,
      answered: answer,
      path,
    });
    if (answer === 0) {
      setTimeout(() => res.destroy(), 3000).unref();
      return;
    }
    res.statusCode = answer;
    res.end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
const adminToken = `chaos-admin-${randomUUID()}`;
const platform =
  O > 1
    ? {
        PLATFORM_KEY: `chaos-platform-${randomUUID()}`,
        VAULT_KEYS: `chaos:${randomBytes(32).toString('base64')}`,
        CSD_TRUSTED_CAS_FILE: testCaFile(),
      }
    : undefined;
const pacPassword = `chaos-pac-${randomUUID()}`;
// A fresh, migrated database of its own: in a private cluster (removed at the end), or on
// $TEST_DATABASE_URL's server (dropped at the end).
const cluster = values.postgres === 'private' ? privatePostgres(await freePort()) : undefined;
if (cluster) {
  cluster.proc.start();
  await until('the private Postgres cluster', cluster.ready, 30_000);
}
const database = await createTestDatabase(cluster ? { serverUrl: cluster.serverUrl } : {});
const databaseUrl = database.url;

const [redisPort, apiPort, primaryPort, backupPort, adminPort, providersPort, tillPort] = (await freePorts(7)) as [
  number,
  number,
  number,
  number,
  number,
  number,
  number,
];
const providersUrl = `http://127.0.0.1:${providersPort}`;
const redisUrl = `redis://127.0.0.1:${redisPort}`;
const redis = privateRedis(redisPort);
const sandbox = Proc.app('sandbox', 'apps/pac-sandbox/src/main.ts', {
  SANDBOX_PRIMARY_PORT: String(primaryPort),
  SANDBOX_BACKUP_PORT: String(backupPort),
  SANDBOX_ADMIN_PORT: String(adminPort),
  SANDBOX_ADMIN_TOKEN: adminToken,
  SANDBOX_SW_PASSWORD: pacPassword,
  SANDBOX_SEED: String(seed),
  // The SAT's rules and the taxpayer registry (which rejects the misnamed customers), not the XSD:
  // on these two cores the XSD (libxmljs2, ~6 ms a document) would be the run's bottleneck, as in
  // the benchmarks (apps/pac-sandbox/README.md).
  SANDBOX_VALIDATION: 'rules',
  // The emisor's certificate is re-issued by the tests' CA (valid until 2099): trusted here.
  SANDBOX_TRUSTED_CA_FILE: testCaFile(),
  LOG_LEVEL: 'warn',
});
// The SAT's test CSD with its certificate re-issued by the tests' CA (valid until 2099): the run does
// not depend on the SAT's test certificates still being valid.
const csdPaths = testCsdPaths('EKU9003173C9');
const csdEnv = { CSD_CER_PATH: csdPaths.cer, CSD_KEY_PATH: csdPaths.key, CSD_PASSWORD_FILE: csdPaths.passwordFile };
// Both APIs list the same keys (API_KEYS is the source of truth: a key one did not list, it would revoke).
const tillKey = `${secrets.apiKey}-till`;
const apiKeys = `chaos:${secrets.apiKey},till:${tillKey},chaos-ops:${secrets.adminKey}:admin`;
const api = Proc.app('api', 'apps/api/src/main.ts', {
  ...csdEnv,
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  PORT: String(apiPort),
  HOST: '127.0.0.1',
  METRICS_PORT: '0',
  API_KEYS: apiKeys,
  STRIPE_WEBHOOK_SECRET: secrets.stripeWebhookSecret,
  STRIPE_API_KEY: secrets.stripeSecretKey,
  STRIPE_API_URL: providersUrl,
  MERCADOPAGO_WEBHOOK_SECRET: secrets.mercadoPagoWebhookSecret,
  MERCADOPAGO_ACCESS_TOKEN: secrets.mercadoPagoAccessToken,
  MERCADOPAGO_API_URL: `${providersUrl}/mercadopago`,
  RATE_LIMIT_PER_MINUTE: '10000000',
  // Every pending invoice correctable at once: corrections race the stamping of the version they replace.
  LATE_MARGIN_HOURS: '72',
  ...platform,
  LOG_LEVEL: 'warn',
});
// Público en general in global mode (#20), on a second API over the same database: the till's sales
// without the customer are tickets; the workers' close timer (sweeper role) issues each ended period's
// factura global every second, racing the customers' self-invoicing and the tickets' refunds.
const tillUrl = `http://127.0.0.1:${tillPort}`;
const apiGlobal = Proc.app('api-global', 'apps/api/src/main.ts', {
  ...csdEnv,
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  PORT: String(tillPort),
  HOST: '127.0.0.1',
  METRICS_PORT: '0',
  API_KEYS: apiKeys,
  RATE_LIMIT_PER_MINUTE: '10000000',
  PUBLICO_GENERAL_MODE: 'global',
  SELF_INVOICE_REQUESTS_PER_MINUTE: '10000000',
  SELF_INVOICE_FAILURES_PER_MINUTE: '10000000',
  LOG_LEVEL: 'warn',
});
// The provider sandbox: Stripe and Mercado Pago, retrying each delivery for ~2 minutes as the API
// restarts and Postgres recovers (Stripe retries for three days).
const providers = Proc.app('providers', 'apps/provider-sandbox/src/main.ts', {
  ...(providerSandboxEnv({
    ...secrets,
    port: providersPort,
    stripeWebhookUrl: `http://127.0.0.1:${apiPort}/webhooks/stripe`,
    mercadoPagoWebhookUrl: `http://127.0.0.1:${apiPort}/webhooks/mercadopago`,
    retryDelaysMs: [200, 500, 1000, 2000, 3000, ...Array<number>(20).fill(5000)],
  }) as Record<string, string>),
  LOG_LEVEL: 'warn',
});
const providerClient = new ProviderSandboxClient(providersUrl);
const pacEnv = (prefix: 'PRIMARY' | 'BACKUP', port: number) => ({
  [`PAC_${prefix}_KIND`]: 'sw',
  [`PAC_${prefix}_URL`]: `http://127.0.0.1:${port}`,
  [`PAC_${prefix}_USER`]: 'timbra',
  [`PAC_${prefix}_PASSWORD`]: pacPassword,
});
const workerEnv = (roles: string) => ({
  ...csdEnv,
  // The other organizations' CSDs are stored sealed by the platform's master key.
  ...(platform ? { VAULT_KEYS: platform.VAULT_KEYS } : {}),
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  WORKER_ROLES: roles,
  WORKER_CONCURRENCY: '8',
  WORKER_HTTP_PORT: '0',
  RELAY_POLL_MS: '500',
  STAMP_LOCK_MS: '5000',
  STAMP_BACKOFF_BASE_MS: '200',
  STAMP_BACKOFF_MAX_MS: '3000',
  STAMP_ATTEMPTS: '50',
  SWEEPER_INTERVAL_MS: '1000',
  GLOBAL_CLOSE_DELAY_MINUTES: '0',
  GLOBAL_CLOSE_POLL_SECONDS: '1',
  CANCEL_POLL_BASE_MS: '300',
  CANCEL_POLL_MAX_MS: '2000',
  SWEEPER_STALE_MS: '4000',
  PAC_CONNECT_TIMEOUT_MS: '1000',
  PAC_RESPONSE_TIMEOUT_MS: '3000',
  CIRCUIT_THRESHOLD: '3',
  CIRCUIT_COOLDOWN_MS: '2000',
  // Above the PAC timeouts (1 s + 3 s): a call in flight is waited for before the proof.
  PROOF_IN_FLIGHT_GRACE_MS: '4500',
  CORRECTION_POLL_MS: '300',
  CORRECTION_RETRY_BASE_MS: '300',
  CORRECTION_RETRY_MAX_MS: '3000',
  SAT_STATUS_URL: `http://127.0.0.1:${primaryPort}/ConsultaCFDIService.svc`,
  SMTP_URL: mailbox.url,
  EMAIL_FROM: 'Chaos <facturas@chaos.test>',
  EMAIL_TIMEOUT_MS: '2000',
  EMAIL_RETRY_BASE_MS: '200',
  EMAIL_RETRY_MAX_MS: '2000',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_RETRY_BASE_MS: '200',
  WEBHOOK_RETRY_MAX_MS: '2000',
  DELIVERY_POLL_MS: '300',
  // Above one send's timeout: a worker killed mid-send loses its claims after this.
  DELIVERY_LEASE_MS: '4000',
  LOG_LEVEL: 'warn',
  ...pacEnv('PRIMARY', primaryPort),
  ...pacEnv('BACKUP', backupPort),
});
const workers = naive
  ? [
      Proc.app('naive-worker', 'scripts/chaos/naive-worker.ts', {
        DATABASE_URL: databaseUrl,
        PAC_PRIMARY_URL: `http://127.0.0.1:${primaryPort}`,
        PAC_BACKUP_URL: `http://127.0.0.1:${backupPort}`,
        PAC_USER: 'timbra',
        PAC_PASSWORD: pacPassword,
      }),
    ]
  : [
      Proc.app('worker-1', 'apps/worker/src/main.ts', workerEnv('relay,sweeper,stamper,deliverer')),
      Proc.app('worker-2', 'apps/worker/src/main.ts', workerEnv('stamper,deliverer')),
    ];
const all = [
  ...(cluster ? [cluster.proc] : []),
  redis,
  sandbox,
  providers,
  api,
  ...(naive ? [] : [apiGlobal]),
  ...workers,
];
// A process that exits without the harness killing it (a crash) is restarted by the supervisor, so
// no figure fails for it: said here as it happens, with its last lines, and counted in the report.
reportUnexpectedExits(all, log);

const apiUrl = `http://127.0.0.1:${apiPort}`;
const adminUrl = `http://127.0.0.1:${adminPort}/__admin`;
const admin = async (path: string, body?: object) => {
  const response = await fetch(`${adminUrl}${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`sandbox admin ${path}: HTTP ${response.status}`);
  return response.json() as Promise<Record<string, unknown>>;
};

// Processes that died (or were killed) come back, as an orchestrator would bring them back.
const held = new Set<Proc>();
let supervising = true;
let supervisor: Promise<void> = Promise.resolve();

const counters = {
  workerKills: 0,
  redisKills: 0,
  postgresCrashes: 0,
  deliveries: 0,
  deliveryRetries: 0,
  restTimeouts: 0,
};
let exitCode = 1;
try {
  redis.start();
  await sleep(300);
  sandbox.start();
  providers.start();
  api.start();
  for (const w of workers) w.start();
  supervisor = (async () => {
    while (supervising) {
      for (const p of all) if (!p.running && !held.has(p)) p.start();
      await sleep(300);
    }
  })();
  await until('the API', async () => (await fetch(`${apiUrl}/readyz`)).ok, 60_000);
  if (!naive) await until('the global-mode API', async () => (await fetch(`${tillUrl}/readyz`)).ok, 60_000);
  await until('the provider sandbox', () => providerClient.healthy(), 30_000);
  await until(
    'the sandbox admin API',
    async () =>
      (await fetch(`${adminUrl}/ledger?received=false`, { headers: { authorization: `Bearer ${adminToken}` } })).ok,
    30_000,
  );
  log(
    `system up: database ${new URL(databaseUrl).pathname.slice(1)}${cluster ? ` (private cluster :${new URL(databaseUrl).port})` : ''}, redis :${redisPort}, api :${apiPort}, PACs :${primaryPort}/:${backupPort}${naive ? ' — NAIVE stamper (deliberately broken)' : ''}`,
  );

  // The organizations: the home one (EMISOR_*, its keys from API_KEYS) and, in platform mode, the
  // others made through /v1/organizations, each with its CSD and keys.
  const home = await (async () => {
    const db = createPrisma(databaseUrl, { poolSize: 1 });
    try {
      const [row] = await db.$queryRaw<{ id: string }[]>`SELECT id::text FROM emisores WHERE rfc = 'EKU9003173C9'`;
      return row!.id;
    } finally {
      await db.$disconnect();
    }
  })();
  const organizations: ChaosOrganization[] = [
    { tag: 'home', id: home, rfc: 'EKU9003173C9', key: secrets.apiKey, adminKey: secrets.adminKey },
    ...(platform
      ? await makeOrganizations(O - 1, {
          apiUrl,
          platformKey: platform.PLATFORM_KEY,
          sandboxAdmin: { url: adminUrl, token: adminToken },
          log,
        })
      : []),
  ];
  const keyOf = new Map(organizations.map((o) => [o.id, o.key]));
  /** The store's key of the organization `id` (an invoice's `organization_id`). */
  const storeKey = (id: string) => keyOf.get(id) ?? secrets.apiKey;
  // The harness calls the API as an integrator does: @timbra/client, one per key (its retries off:
  // deliver() below retries with the same Idempotency-Key, and counts each try).
  const clients = new Map<string, ReturnType<typeof createTimbra>>();
  const timbraFor = (key: string) => {
    if (!clients.has(key)) clients.set(key, createTimbra({ baseUrl: apiUrl, apiKey: key, retries: 0 }));
    return clients.get(key)!;
  };
  // Each organization's endpoint, for every event: registered before the first payment.
  for (const o of organizations) {
    const path = o.tag === 'home' ? '/hooks' : `/hooks/${o.tag}`;
    const registered = await fetch(`${apiUrl}/v1/webhook-endpoints`, {
      method: 'POST',
      body: JSON.stringify({ url: `${receiverUrl.replace(/\/hooks$/, '')}${path}`, events: ['*'] }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${o.adminKey}` },
    });
    if (registered.status !== 201) throw new Error(`POST /v1/webhook-endpoints: HTTP ${registered.status}`);
    hooks.secrets.set(path, ((await registered.json()) as { secret: string }).secret);
  }
  log(
    `webhook endpoint registered (every event${O > 1 ? `, one for each of ${O} organizations` : ''}); the receiver fails ~10% with 500 and ~5% by timeout, the SMTP server drops ~10% and defers ~10%`,
  );

  // --- Faults --------------------------------------------------------------------------------
  await admin('/faults', {
    instance: 'primary',
    reset: true,
    seed,
    errorRate: 0.05,
    dropRate: 0.1,
    dropMode: 'destroy',
    latencyMs: [5, 40],
  });
  await admin('/faults', { instance: 'backup', reset: true, seed: seed + 1, errorRate: 0.05, latencyMs: [5, 40] });
  log('faults: 5% errors before processing on both PACs, 10% stamp-then-drop on the primary, 5–40 ms latency');

  const loadStart = Date.now();
  const sendWindowMs = durationS * 600;
  const timers: Promise<void>[] = [];
  const at = (ms: number, what: () => Promise<void>) =>
    timers.push(
      sleep(ms)
        .then(what)
        .catch((error: unknown) => {
          log(`a scheduled step failed: ${(error as Error).message}`);
        }),
    );
  at(durationS * 250, async () => {
    await admin('/faults', { instance: 'primary', outageUntil: Date.now() + Math.max(3000, durationS * 100) });
    log(`primary PAC outage for ${Math.max(3, durationS / 10).toFixed(0)} s: failover must carry the load`);
  });
  at(durationS * 400, async () => {
    held.add(redis);
    await redis.stop('SIGKILL');
    counters.redisKills++;
    log('redis killed (SIGKILL); it comes back empty: every queued job is lost');
    await sleep(1000);
    held.delete(redis);
  });
  if (cluster)
    at(durationS * 550, async () => {
      held.add(cluster.proc);
      await cluster.proc.stop('SIGKILL');
      counters.postgresCrashes++;
      log(
        'postgres crashed (SIGKILL to the postmaster; its backends end on noticing); it restarts through crash recovery',
      );
      await sleep(1500);
      held.delete(cluster.proc);
    });
  const killing = (async () => {
    let i = 0;
    while (Date.now() - started < durationS * 1000) {
      await sleep(Math.min(6000, Math.max(1500, durationS * 80)));
      const victim = workers[i++ % workers.length]!;
      held.add(victim);
      await victim.stop('SIGKILL');
      counters.workerKills++;
      log(`${victim.name} killed (SIGKILL)`);
      await sleep(500);
      held.delete(victim);
    }
  })();

  // --- Load --------------------------------------------------------------------------------------
  type Kind = 'stripe' | 'mercadopago' | 'rest';
  const METHODS = ['card_credit', 'card_debit', 'card_prepaid', 'oxxo', 'customer_balance'] as const;
  const plan = Array.from({ length: N }, (_, i) => {
    const r = random();
    const kind: Kind = r < 0.7 ? 'stripe' : r < 0.85 ? 'mercadopago' : 'rest';
    const centavos = 10_000 + Math.floor(random() * 500_000);
    // ~10% of Stripe payments are authorizations (manual capture): most captured later — a third of
    // those for less — and ~1 in 5 never (nothing may be invoiced for them).
    const manual = kind === 'stripe' && random() < 0.1;
    const capture = !manual
      ? undefined
      : random() < 0.2
        ? { never: true as const }
        : { centavos: random() < 0.33 ? Math.floor(centavos * 0.7) : centavos, delayMs: Math.floor(random() * 2000) };
    return {
      i,
      kind,
      /** The provider's id: known once the sandbox made the payment (REST: ours). */
      externalId: kind === 'rest' ? `rest-${i}` : '',
      /** Its organization (emisores.id): the REST payments go round them; the providers' are the home one's. */
      org: kind === 'rest' ? organizations[i % organizations.length]!.id : home,
      method: METHODS[Math.floor(random() * METHODS.length)]!,
      centavos,
      capture,
      /** Events of the payment, as made; delivered in order or reversed, ~30% of them twice. */
      events: [] as string[],
      reverse: random() < 0.3,
      again: random() < 0.3,
      startMs: Math.floor(random() * sendWindowMs),
      /**
       * REST payments only: `wrong-name` names the customer unlike the SAT's registry (rejected, then
       * corrected); `race` sends a correction right after the payment, while it is being stamped.
       */
      correction: ((): 'wrong-name' | 'race-named' | 'race-public' | undefined => {
        if (kind !== 'rest' || naive) return undefined;
        const c = random();
        return c < 0.25 ? 'wrong-name' : c < 0.4 ? 'race-named' : c < 0.5 ? 'race-public' : undefined;
      })(),
      /** REST payments not corrected: ~60% sell three lines (IVA 16%, 0% and exento) adding up to the amount. */
      lines: kind === 'rest' && random() < 0.6,
      // ~10% of captured Stripe payments are partly refunded up to 4 s after the payment was made —
      // sometimes before its events have arrived (409, redelivered); ~1 in 6 refunds fails at once.
      refund:
        kind === 'stripe' && !naive && !capture?.never && random() < 0.1
          ? {
              id: '',
              centavos: 100 + Math.floor(random() * 5_000),
              fails: random() < 0.15,
              again: random() < 0.3,
              delayMs: Math.floor(random() * 4000),
              events: [] as string[],
            }
          : undefined,
    };
  });
  // Cancellations: at 70% of the run, ~2% of the invoices stamped by then (not refunded ones: an
  // Ingreso with Egresos related to it is not cancelled on its own) are cancelled through the API.
  const cancelsPlanned: string[] = [];
  const ackedCancels = new Set<string>();
  const acked = new Set<string>();
  const providerOf = (p: (typeof plan)[number]) => (p.kind === 'rest' ? 'api:chaos' : p.kind);
  /** A payment's key in `acked` and in the database's view: its provider and its id there. */
  const paymentKey = (p: (typeof plan)[number]) => `${providerOf(p)}|${p.externalId}`;

  // At most this many requests in flight, as a provider's delivery pool would be: retries of a
  // slow API must not pile up sockets in the harness.
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  const slot = async () => {
    while (inFlight >= 64) await new Promise<void>((resolve) => waiting.push(resolve));
    inFlight++;
  };
  const release = () => {
    inFlight--;
    waiting.shift()?.();
  };

  /**
   * Sends until a 2xx, as careful clients do; `onAck` on the 2xx. It gives up only when both the
   * faults are long over (the run's duration + 2 minutes) and this request has been tried for 2
   * minutes itself: on a slow machine sending lasts well past the run's duration, and a payment sent
   * then must get the same patience as one sent on time.
   */
  /**
   * A REST call through @timbra/client until the API says 2xx: the same Idempotency-Key on every try
   * (the harness is more patient than the client's own retries, which are off here).
   */
  async function deliver(
    onAck: () => void,
    what: string,
    send: (signal: AbortSignal) => Promise<{ response: Response; error?: unknown }>,
    timeoutMs?: number,
  ) {
    const firstTry = Date.now();
    let last: string;
    for (let attempt = 0; ; attempt++) {
      counters.deliveries++;
      if (attempt > 0) counters.deliveryRetries++;
      await slot();
      try {
        const { response, error } = await send(AbortSignal.timeout(attempt === 0 && timeoutMs ? timeoutMs : 10_000));
        if (response.ok) {
          onAck();
          return;
        }
        last = `HTTP ${response.status} ${JSON.stringify(error ?? null).slice(0, 160)}`;
      } catch (error) {
        if ((error as Error).name === 'TimeoutError') counters.restTimeouts++;
        last = `${(error as Error).name}: ${(error as Error).message}`;
      } finally {
        release();
      }
      const now = Date.now();
      if (now - started > (durationS + 120) * 1000 && now - firstTry > 120_000) {
        // What the API last said tells a refusal of the product from the harness's own patience.
        log(`gave up on ${what} after ${attempt + 1} tries; last: ${last}`);
        return;
      }
      await sleep(200 + attempt * 200);
    }
  }
  /** A call to the provider sandbox (never down; its deliveries retry on their own). */
  const atProvider = async <T>(call: () => Promise<T>): Promise<T> => {
    await slot();
    try {
      return await call();
    } finally {
      release();
    }
  };
  /** Sends a held event; the sandbox retries it until the API answers 2xx. */
  const sendEvent = async (id: string) => {
    // Sending a held event again is harmless (the API dedupes it), so a connection the provider
    // sandbox closed under load (keep-alive reset) is retried; creating calls are not.
    for (let attempt = 0; ; attempt++) {
      try {
        return await atProvider(() => providerClient.deliver(id));
      } catch (error) {
        if (attempt >= 5 || !(error instanceof TypeError)) throw error;
        await sleep(200 * (attempt + 1));
      }
    }
  };
  const sendEvents = async (ids: readonly string[], reverse: boolean, again: boolean) => {
    for (const id of reverse ? [...ids].reverse() : ids) await sendEvent(id);
    if (again) {
      await sleep(Math.floor(random() * 3000));
      await sendEvent(ids[0]!);
    }
  };

  const corrections = { raced: [] as number[], fixed: new Set<string>(), replaced: new Map<string, string>() };
  /** PATCH /v1/invoices/:id until it is answered (2xx or a final 4xx); `onAnswer` gets the status. */
  const patchUntilAnswered = async (
    invoiceId: string,
    change: object,
    key: string,
    bearer: string,
    onAnswer: (status: number) => void,
  ) => {
    for (let attempt = 0; attempt < 200; attempt++) {
      await slot();
      try {
        const response = await fetch(`${apiUrl}/v1/invoices/${invoiceId}`, {
          method: 'PATCH',
          body: JSON.stringify(change),
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${bearer}`,
            'idempotency-key': key,
          },
          signal: AbortSignal.timeout(10_000),
        });
        await response.text();
        if (response.ok || (response.status >= 400 && response.status < 500 && response.status !== 429)) {
          onAnswer(response.status);
          return;
        }
      } catch {
        // The API restarting, Postgres recovering: ask again.
      } finally {
        release();
      }
      await sleep(300);
    }
  };

  /** Three lines with tax included — 16%, 0%, exento — whose prices add up to `centavos`. */
  const linesOf = (centavos: number) => {
    const a = Math.floor(centavos * 0.6);
    const b = Math.floor(centavos * 0.3);
    const money = (c: number) => (c / 100).toFixed(2);
    return [
      { descripcion: 'Artículo', amount: money(a) },
      { descripcion: 'Alimento', amount: money(b), taxes: { iva: '0' as const } },
      { descripcion: 'Libro', amount: money(centavos - a - b), taxes: { iva: 'exento' as const } },
    ];
  };

  const send = async (p: (typeof plan)[number]): Promise<void> => {
    if (p.kind === 'stripe') {
      const made = await atProvider(() =>
        providerClient.stripePayment({
          amount: p.centavos,
          method: p.method,
          capture: p.capture ? 'manual' : 'automatic',
          deliver: 'hold',
          ...(p.i % 2 === 0 ? { receiptEmail: `cliente-${p.i}@chaos.example` } : {}),
        }),
      );
      p.externalId = made.paymentIntent.id;
      p.events.push(...made.events);
      const sent = sendEvents(made.events, p.reverse, p.again);
      const refunded = p.refund ? sendRefund(p, p.refund) : Promise.resolve();
      if (p.capture && !p.capture.never) {
        await sleep(p.capture.delayMs);
        const amount = p.capture.centavos;
        const captured = await atProvider(() =>
          providerClient.capture(made.paymentIntent.id, { amount, deliver: 'hold' }),
        );
        p.events.push(...captured.events);
        await sendEvents(captured.events, p.reverse, p.again);
      }
      await Promise.all([sent, refunded]);
      return;
    }
    if (p.kind === 'mercadopago') {
      const made = await atProvider(() =>
        providerClient.mercadoPagoPayment({
          amount: p.centavos / 100,
          paymentType: 'credit_card',
          deliver: 'hold',
          ...(p.i % 2 === 0 ? { payerEmail: `cliente-${p.i}@chaos.example` } : {}),
        }),
      );
      p.externalId = String(made.payment.id);
      p.events.push(...made.events);
      await sendEvents(made.events, false, p.again);
      return;
    }
    const named = p.correction === 'wrong-name' || p.correction === 'race-named';
    const body = {
      externalId: p.externalId,
      amount: (p.centavos / 100).toFixed(2),
      currency: 'MXN',
      occurredAt: new Date(started - 10_000).toISOString(),
      email: `cliente-${p.i}@chaos.example`,
      metadata: { chaos_payment: String(p.i) },
      ...(named
        ? { receptor: { ...XOCHILT, nombre: p.correction === 'wrong-name' ? 'XOCHILT CASAS' : XOCHILT.nombre } }
        : {}),
      ...(p.lines && !p.correction ? { conceptos: linesOf(p.centavos) } : {}),
    };
    // A tight first timeout: the client gives up while the API may commit, and retries with the same key.
    await deliver(
      () => void acked.add(paymentKey(p)),
      `POST /v1/payments ${p.externalId}`,
      (signal) =>
        timbraFor(storeKey(p.org)).POST('/v1/payments', {
          body,
          params: { header: { 'Idempotency-Key': `chaos-${p.i}` } },
          signal,
        }),
      random() < 0.5 ? 5 : undefined,
    );
    if (p.correction === 'race-named' || p.correction === 'race-public') await raceCorrection(p);
  };
  /** A correction sent while the invoice may be being stamped: PATCH until the API answers. */
  const raceCorrection = async (p: (typeof plan)[number]) => {
    const db = createPrisma(databaseUrl, { poolSize: 1 });
    let invoiceId: string | undefined;
    try {
      for (let i = 0; i < 50 && !invoiceId; i++) {
        const [row] = await db.$queryRaw<{ id: string }[]>`
          SELECT i.id FROM invoices i JOIN payments p ON p.id = i.payment_id
          WHERE p.provider = 'api:chaos' AND p.external_id = ${p.externalId} AND i.kind = 'I'`;
        invoiceId = row?.id;
        if (!invoiceId) await sleep(200);
      }
    } catch {
      // Postgres may be down this instant: no race for this payment then.
    } finally {
      await db.$disconnect();
    }
    if (!invoiceId) return;
    const change =
      p.correction === 'race-named' ? { receptor: { usoCfdi: 'G01' } } : { reason: 'chaos: a fresh Fecha' };
    await patchUntilAnswered(invoiceId, change, `chaos-race-${p.i}`, storeKey(p.org), (status) =>
      corrections.raced.push(status),
    );
  };
  /** A refund made at Stripe a little after its payment (whose events may not have arrived yet). */
  const sendRefund = async (p: (typeof plan)[number], refund: NonNullable<(typeof plan)[number]['refund']>) => {
    await sleep(refund.delayMs);
    if (p.capture && !p.capture.never) {
      // An authorization is refundable once captured: wait for it.
      while (p.events.length < 4) await sleep(100);
    }
    const made = await atProvider(() =>
      providerClient.stripeRefund({
        paymentIntent: p.externalId,
        amount: refund.centavos,
        status: refund.fails ? 'failed' : 'succeeded',
        deliver: 'hold',
      }),
    );
    refund.id = made.refund.id;
    refund.events.push(...made.events);
    await sendEvents(made.events, p.reverse, refund.again);
  };
  const sending = plan.map((p) => sleep(p.startMs).then(() => send(p)));

  // --- Tickets (global mode) -----------------------------------------------------------------------
  // Sales at the till without the customer, dated one to three days back (their periods have ended:
  // the close timer issues each one's global within a second); ~40% self-invoiced by their customer
  // 0–1.5 s later, racing the close; ~20% refunded 0–3 s later, in part or in full — before or after
  // their global.
  const T = naive ? 0 : Math.max(20, Math.round(N / 10));
  const ticketPlan = Array.from({ length: T }, (_, i) => ({
    i,
    externalId: `till-${i}`,
    centavos: 5_000 + Math.floor(random() * 200_000),
    daysBack: 1 + Math.floor(random() * 3),
    formaPago: random() < 0.5 ? '01' : '04',
    startMs: Math.floor(random() * sendWindowMs),
    selfInvoice: random() < 0.4 ? { delayMs: Math.floor(random() * 1500) } : undefined,
    refund: random() < 0.2 ? { delayMs: Math.floor(random() * 3000), full: random() < 0.4 } : undefined,
    code: '',
  }));
  const ticketOutcomes = { selfInvoiced: 0, refused: 0, refunds: 0 };
  /** A request to the till's API until it is answered (2xx or a final 4xx). */
  const untilAnswered = async (url: string, init: () => RequestInit): Promise<Response | undefined> => {
    for (let attempt = 0; attempt < 300; attempt++) {
      await slot();
      try {
        const response = await fetch(url, { ...init(), signal: AbortSignal.timeout(10_000), redirect: 'manual' });
        if (response.status < 500 && response.status !== 429) return response;
        await response.text();
      } catch {
        // The API restarting, Postgres recovering: ask again.
      } finally {
        release();
      }
      await sleep(300);
    }
    return undefined;
  };
  const till = { authorization: `Bearer ${tillKey}`, 'content-type': 'application/json' };
  const ticketing = Promise.all(
    ticketPlan.map(async (t) => {
      await sleep(t.startMs);
      const occurredAt = new Date(Date.now() - t.daysBack * 86_400_000 - Math.floor(random() * 3_600_000));
      const sale = await untilAnswered(`${tillUrl}/v1/payments`, () => ({
        method: 'POST',
        headers: { ...till, 'idempotency-key': `till-sale-${t.i}` },
        body: JSON.stringify({
          externalId: t.externalId,
          amount: (t.centavos / 100).toFixed(2),
          currency: 'MXN',
          occurredAt: occurredAt.toISOString(),
          formaPago: t.formaPago,
        }),
      }));
      if (!sale?.ok) throw new Error(`ticket ${t.i}: POST /v1/payments answered ${sale?.status}`);
      const body = (await sale.json()) as { id: string; ticket?: { code: string } };
      if (!body.ticket) throw new Error(`ticket ${t.i}: the sale did not become a ticket`);
      t.code = body.ticket.code;
      await Promise.all([
        t.selfInvoice &&
          sleep(t.selfInvoice.delayMs).then(async () => {
            // As a browser: the form (its CSRF cookie and field), then the post.
            const form = await untilAnswered(`${tillUrl}/facturar`, () => ({ method: 'GET' }));
            const cookie = /timbra_csrf=([^;]+)/.exec(form?.headers.get('set-cookie') ?? '')?.[1];
            const csrf = /name="_csrf" value="([^"]+)"/.exec((await form?.text()) ?? '')?.[1];
            if (!cookie || !csrf) throw new Error(`ticket ${t.i}: GET /facturar gave no CSRF token`);
            const answer = await untilAnswered(`${tillUrl}/facturar`, () => ({
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `timbra_csrf=${cookie}` },
              body: new URLSearchParams({
                _csrf: csrf,
                codigo: t.code,
                total: (t.centavos / 100).toFixed(2),
                rfc: XOCHILT.rfc,
                nombre: XOCHILT.nombre,
                codigoPostal: XOCHILT.codigoPostal,
                regimenFiscal: XOCHILT.regimenFiscal,
                usoCfdi: XOCHILT.usoCfdi,
              }).toString(),
            }));
            // 303: invoiced; 409: too late (in its global) or refunded first.
            if (answer?.status === 303) ticketOutcomes.selfInvoiced++;
            else if (answer?.status === 409) ticketOutcomes.refused++;
            else throw new Error(`ticket ${t.i}: /facturar answered ${answer?.status}`);
          }),
        t.refund &&
          sleep(t.refund.delayMs).then(async () => {
            const cents = t.refund!.full ? t.centavos : Math.max(1, Math.floor(t.centavos * 0.3));
            const refunded = await untilAnswered(`${tillUrl}/v1/payments/${body.id}/refunds`, () => ({
              method: 'POST',
              headers: { ...till, 'idempotency-key': `till-refund-${t.i}` },
              body: JSON.stringify({ externalId: `till-refund-${t.i}`, amount: (cents / 100).toFixed(2) }),
            }));
            if (!refunded?.ok) throw new Error(`ticket ${t.i}: its refund answered ${refunded?.status}`);
            ticketOutcomes.refunds++;
          }),
      ]);
    }),
  );
  // The invoices the cancellations and replacements act on must be stamped. On a machine slower than
  // the load, few are by 70% of the run: each pick waits (looking every second) until it has the
  // number it wants, or until every payment has been sent and a minute more has passed, so a slow run
  // still exercises both.
  let allSentAt = 0;
  void Promise.allSettled(sending).then(() => (allSentAt = Date.now()));
  const pickStamped = async (
    what: string,
    want: number,
    pick: (db: ReturnType<typeof createPrisma>) => Promise<{ id: string; org: string }[]>,
  ) => {
    const db = createPrisma(databaseUrl, { poolSize: 1 });
    let chosen: { id: string; org: string }[] = [];
    const startedAt = Date.now();
    try {
      for (;;) {
        chosen = await pick(db).catch(() => chosen); // Postgres recovering this instant: look again.
        if (chosen.length >= want || (allSentAt > 0 && Date.now() >= allSentAt + 60_000)) break;
        await sleep(1000);
      }
    } finally {
      await db.$disconnect();
    }
    const waitedS = (Date.now() - startedAt) / 1000;
    if (chosen.length < want)
      log(`${what}: only ${chosen.length} of ${want} wanted were stamped a minute after the last payment was sent`);
    else if (waitedS >= 1) log(`${what}: waited ${waitedS.toFixed(1)} s for ${want} stamped invoices`);
    for (const c of chosen) invoiceOrg.set(c.id, c.org);
    return chosen.map((c) => c.id);
  };
  /** The organization of each invoice picked for a change: its store's key asks for it. */
  const invoiceOrg = new Map<string, string>();
  const changesWanted = Math.max(2, Math.round(N * 0.02));
  // The replacements leave out the invoices being cancelled: they are picked once those are.
  let picked = () => {};
  const cancelsPicked = new Promise<void>((resolve) => (picked = resolve));
  if (!naive)
    at(durationS * 700, async () => {
      try {
        cancelsPlanned.push(
          ...(await pickStamped(
            'cancellations',
            changesWanted,
            (db) => db.$queryRaw<{ id: string; org: string }[]>`
              SELECT i.id, i.organization_id::text AS org FROM invoices i
              WHERE i.kind = 'I' AND i.status = 'stamped' AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = i.payment_id)
                -- Not a ticket's document (a global, a self-invoiced Ingreso): the tickets' checks expect them stamped.
                AND i.global_period_id IS NULL AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.payment_id = i.payment_id)
              ORDER BY md5(i.id::text || ${String(seed)}) LIMIT ${changesWanted}`,
          )),
        );
      } finally {
        picked();
      }
      log(`cancelling ${cancelsPlanned.length} stamped invoices through the API (motivo 02)`);
      await Promise.all(
        cancelsPlanned.map((id) =>
          deliver(
            () => void ackedCancels.add(id),
            `POST /v1/invoices/${id}/cancel`,
            (signal) =>
              timbraFor(storeKey(invoiceOrg.get(id) ?? home)).POST('/v1/invoices/{id}/cancel', {
                params: { path: { id }, header: { 'Idempotency-Key': `chaos-cancel-${id}` } },
                body: { motivo: '02' },
                signal,
              }),
          ),
        ),
      );
    });
  // Replacements: at 75% of the run, ~2% of the stamped REST invoices (not being cancelled).
  if (!naive)
    at(durationS * 750, async () => {
      await cancelsPicked;
      const chosen = await pickStamped(
        'replacements',
        changesWanted,
        (db) => db.$queryRaw<{ id: string; org: string }[]>`
            SELECT i.id, i.organization_id::text AS org FROM invoices i JOIN payments p ON p.id = i.payment_id
            WHERE p.provider = 'api:chaos' AND i.kind = 'I' AND i.status = 'stamped'
              AND NOT (i.id = ANY(${cancelsPlanned}::uuid[]))
            ORDER BY md5(i.id::text || ${String(seed)}) LIMIT ${changesWanted}`,
      );
      log(`replacing ${chosen.length} stamped invoices through the API (TipoRelacion 04, then motivo 01)`);
      await Promise.all(
        chosen.map(async (id) => {
          for (let attempt = 0; attempt < 200; attempt++) {
            await slot();
            try {
              const response = await fetch(`${apiUrl}/v1/invoices/${id}/replace`, {
                method: 'POST',
                body: JSON.stringify({ reason: 'chaos: replaced' }),
                headers: {
                  'content-type': 'application/json',
                  authorization: `Bearer ${storeKey(invoiceOrg.get(id) ?? home)}`,
                  'idempotency-key': `chaos-replace-${id}`,
                },
                signal: AbortSignal.timeout(10_000),
              });
              const body = (await response.json().catch(() => ({}))) as { id?: string };
              if (response.status === 201 && body.id) corrections.replaced.set(id, body.id);
              if (response.ok || (response.status >= 400 && response.status < 500 && response.status !== 429)) return;
            } catch {
              // Ask again.
            } finally {
              release();
            }
            await sleep(300);
          }
        }),
      );
    });
  await Promise.all(sending);
  await ticketing;
  // Late tickets went to today's period, which has not ended: closed now, as an admin does.
  if (!naive) {
    const db = createPrisma(databaseUrl, { poolSize: 1 });
    try {
      for (;;) {
        const open = await db.$queryRaw<{ day: string }[]>`
          SELECT DISTINCT period_starts_on::text AS day FROM tickets WHERE status = 'open'`.catch(() => undefined);
        if (open && open.length === 0) break;
        for (const { day } of open ?? [])
          await untilAnswered(`${tillUrl}/v1/globals`, () => ({
            method: 'POST',
            headers: { authorization: `Bearer ${secrets.adminKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ startsOn: day }),
          }));
        await sleep(500);
      }
    } finally {
      await db.$disconnect();
    }
    log(
      `made ${T} tickets: ${ticketOutcomes.selfInvoiced} self-invoiced on /facturar, ${ticketOutcomes.refused} too late (their global first), ${ticketOutcomes.refunds} refunded`,
    );
  }
  // Customers whose name the PAC rejected: corrected once their invoice is dead-lettered.
  const wrongNames = plan.filter((p) => p.correction === 'wrong-name').map((p) => p.externalId);
  let correcting = true;
  const corrector = (async () => {
    const db = createPrisma(databaseUrl, { poolSize: 1 });
    try {
      while (correcting) {
        try {
          const rejected = await db.$queryRaw<{ id: string; org: string }[]>`
            SELECT i.id, i.organization_id::text AS org FROM invoices i JOIN payments p ON p.id = i.payment_id
            WHERE p.provider = 'api:chaos' AND p.external_id = ANY(${wrongNames}::text[]) AND i.kind = 'I'
              AND i.status = 'stamp_failed'
              AND NOT EXISTS (SELECT 1 FROM invoice_corrections c WHERE c.invoice_id = i.id AND c.status <> 'refused')`;
          for (const { id, org } of rejected)
            await patchUntilAnswered(
              id,
              { receptor: { nombre: XOCHILT.nombre }, reason: 'name as the SAT has it' },
              `chaos-fix-${id}`,
              storeKey(org),
              (status) => {
                if (status < 300) corrections.fixed.add(id);
              },
            );
        } catch {
          // Postgres recovering: look again.
        }
        await sleep(500);
      }
    } finally {
      await db.$disconnect();
    }
  })();
  // The provider's retries: wait until every event was delivered (2xx) or gave up.
  let deliveries = await providerClient.deliveries();
  for (const deadline = Date.now() + 180_000; deliveries.some((d) => d.pending) && Date.now() < deadline;) {
    await sleep(500);
    deliveries = await providerClient.deliveries();
  }
  const sentAt = Date.now();
  const delivered = new Set(deliveries.filter((d) => d.delivered).map((d) => d.id));
  const providerAttempts = deliveries.reduce((n, d) => n + d.attempts.length, 0);
  counters.deliveries += providerAttempts;
  counters.deliveryRetries += providerAttempts - deliveries.filter((d) => d.attempts.length > 0).length;
  // A provider payment is acknowledged when every one of its events was (uncaptured ones: not counted
  // as payments — they must have no rows).
  for (const p of plan)
    if (p.kind !== 'rest' && !p.capture?.never && p.events.length > 0 && p.events.every((e) => delivered.has(e)))
      acked.add(paymentKey(p));
  const refundsPlanned = plan.flatMap((p) => (p.refund && !p.refund.fails ? [p.refund] : []));
  const ackedRefunds = new Set(
    refundsPlanned.filter((r) => r.events.length > 0 && r.events.every((e) => delivered.has(e))).map((r) => r.id),
  );
  const failedRefunds = new Set(plan.flatMap((p) => (p.refund?.fails ? [p.refund.id] : [])));
  const uncaptured = plan.filter((p) => p.capture?.never).map((p) => p.externalId);
  const paymentsExpected = plan.filter((p) => !p.capture?.never).length;
  log(
    `made ${N} payments (${uncaptured.length} authorizations never captured) and ${refundsPlanned.length + failedRefunds.size} refunds (${failedRefunds.size} failed); ${providerAttempts} provider deliveries, ${counters.deliveryRetries} retried; ${acked.size} payments and ${ackedRefunds.size} refunds acknowledged`,
  );
  await Promise.all([killing, ...timers]);

  // --- Drain ---------------------------------------------------------------------------------------
  const prisma = createPrisma(databaseUrl, { poolSize: 2 });
  // The backlog a run leaves on two cores takes 2 minutes, or 40 ms a payment; on a slower machine it
  // is waited for while it goes down (waiting.ts).
  const drainMs = Math.max(120_000, N * 40);
  const drain = await waitWhileMoving(
    async () => {
      const [row] = await prisma.$queryRaw<Left[]>`
      SELECT (SELECT count(*) FROM outbox WHERE status IN ('pending', 'enqueued', 'held'))::int AS outbox,
             (SELECT count(*) FROM invoices WHERE status = 'waiting')::int AS waiting,
             (SELECT count(*) FROM cancel_requests WHERE status IN ('requested', 'accepted'))::int AS cancellations,
             (SELECT count(*) FROM invoice_corrections WHERE status = 'proving')::int AS corrections,
             (SELECT count(*) FROM invoices i JOIN payments p ON p.id = i.payment_id
              WHERE p.provider = 'api:chaos' AND p.external_id = ANY(${wrongNames}::text[]) AND i.kind = 'I'
                AND i.uuid IS NULL
                AND NOT EXISTS (SELECT 1 FROM invoices r WHERE r.replaces_invoice_id = i.id))::int AS rejected_customers,
             (SELECT count(*) FROM invoices o JOIN invoices r ON r.replaces_invoice_id = o.id
              WHERE o.status = 'stamped' AND r.status = 'stamped')::int AS replaced_standing`;
      return Object.fromEntries(Object.entries(row!).filter(([, n]) => n > 0));
    },
    { minMs: drainMs, stallMs: 60_000 },
  );
  const drainedAt = drain.doneAt ?? 0;
  correcting = false;
  await corrector;
  log(
    drainedAt
      ? `outbox drained ${((drainedAt - sentAt) / 1000).toFixed(1)} s after the last delivery`
      : `outbox NOT drained (${drain.gaveUp}): ${JSON.stringify(drain.left)}`,
  );
  await sleep(1500); // answers in flight land in the ledger
  // The orphan production fears, planted (sat-record.ts): the workers held, so nothing but the
  // reconciliation with the SAT's record can find it; they come back for its webhook.
  let adoption: Figure | undefined;
  if (!naive) {
    for (const w of workers) held.add(w);
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    const externalId = `chaos-plant-${seed}`;
    const planted = await plantOrphan({
      databaseUrl,
      externalId,
      makePayment: async () => {
        const { error } = await timbraFor(secrets.apiKey).POST('/v1/payments', {
          body: {
            externalId,
            amount: '116.00',
            currency: 'MXN',
            occurredAt: new Date(Date.now() - 60_000).toISOString(),
          },
          params: { header: { 'Idempotency-Key': externalId } },
        });
        if (error) throw new Error(`the planted payment was refused: ${JSON.stringify(error)}`);
      },
      pac: { url: `http://127.0.0.1:${primaryPort}`, user: 'timbra', password: pacPassword },
      admin,
    });
    log(
      `planted an orphan: invoice ${planted.invoiceId} stamped at the primary as ${planted.uuid}, its answer dropped`,
    );
    adoption = await adoptionFigure({
      organization: organizations[0]!,
      planted,
      databaseUrl,
      descargaUrl: `http://127.0.0.1:${primaryPort}`,
      log,
    });
    for (const w of workers) held.delete(w);
  }
  // Emails and webhooks of everything that happened, through the faults, until none is left to send.
  const openDeliveries = async (): Promise<Left> => {
    const [row] = await prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM deliveries WHERE status IN ('pending', 'sending')`;
    return { deliveries: row!.n };
  };
  // (The naive stamper has no deliverer: nothing to wait for.)
  const delivering = naive
    ? { left: await openDeliveries(), gaveUp: 'no deliverer' }
    : await waitWhileMoving(openDeliveries, { minMs: Math.max(60_000, N * 20), stallMs: 60_000 });
  const deliveriesOpen = delivering.left.deliveries ?? 0;
  log(
    deliveriesOpen === 0
      ? 'every email and webhook sent'
      : `${deliveriesOpen} deliveries still open (${delivering.gaveUp})`,
  );

  // The SAT's own record, read as production reads it (sat-record.ts), before the checks below (an
  // adopted timbre is then in our DB, as in production).
  const satFigures = naive
    ? []
    : await satRecordFigures({
        organizations,
        databaseUrl,
        descargaUrl: `http://127.0.0.1:${primaryPort}`,
        log,
      });

  // --- Checks --------------------------------------------------------------------------------------
  const ledger = (await admin('/ledger')) as {
    stamps: { uuid: string; cadenaHash: string; instance: string; customid?: string; cancellation?: object }[];
    duplicates: { cadenaHash: string; uuids: string[] }[];
    received: { instance: string; customid?: string; xmlSha256: string; outcome: string }[];
  };
  const payments = await prisma.$queryRaw<
    { provider: string; external_id: string; amount: string; invoices: number; stamped: number }[]
  >`
    SELECT p.provider, p.external_id, p.amount::text AS amount,
           count(i.id)::int AS invoices, count(i.id) FILTER (WHERE i.status IN ('stamped', 'cancel_requested', 'cancelled') AND i.uuid IS NOT NULL)::int AS stamped
    FROM payments p
    -- The payment's live Ingreso: not one that another replaced (TipoRelacion 04; checked below).
    LEFT JOIN invoices i ON i.payment_id = p.id AND i.kind = 'I'
                        AND NOT EXISTS (SELECT 1 FROM invoices r WHERE r.replaces_invoice_id = i.id)
    GROUP BY p.provider, p.external_id, p.amount`;
  // Every version of every document (the current one and those a correction superseded).
  const versions = await prisma.$queryRaw<
    { invoice_id: string; stamp_key: string; version: number; cadena: string; xml: string; superseded: boolean }[]
  >`
    SELECT id AS invoice_id, stamp_key, version, cadena_original AS cadena, frozen_xml AS xml, false AS superseded
    FROM invoices WHERE frozen_xml IS NOT NULL
    UNION ALL
    SELECT invoice_id, stamp_key, version, cadena_original, frozen_xml, superseded_at IS NOT NULL
    FROM invoice_versions WHERE superseded_at IS NOT NULL`;
  const correctionRows = await prisma.$queryRaw<{ status: string; code: string | null; n: number }[]>`
    SELECT status, code, count(*)::int AS n FROM invoice_corrections WHERE code IS DISTINCT FROM 'replaced'
    GROUP BY status, code ORDER BY status, code`;
  const replacements = await prisma.$queryRaw<
    {
      original: string;
      original_status: string;
      replacement: string;
      replacement_status: string;
      ok: number;
      requests: number;
    }[]
  >`
    SELECT o.id AS original, o.status::text AS original_status, r.id AS replacement, r.status::text AS replacement_status,
           count(c.id) FILTER (WHERE c.motivo = '01' AND c.folio_sustitucion = upper(r.uuid) AND c.status = 'cancelled')::int AS ok,
           count(c.id)::int AS requests
    FROM invoices o JOIN invoices r ON r.replaces_invoice_id = o.id
    LEFT JOIN cancel_requests c ON c.invoice_id = o.id
    GROUP BY o.id, o.organization_id, r.id, r.organization_id`;
  const [needsData] = await prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM invoices WHERE status = 'needs_data'`;
  const invoices = await prisma.$queryRaw<
    {
      id: string;
      org: string;
      serie: string;
      folio: number;
      uuid: string | null;
      stamp_key: string;
      frozen_xml: string | null;
    }[]
  >`
    SELECT id, organization_id::text AS org, serie, folio, uuid, stamp_key, frozen_xml FROM invoices`;
  const replacedOriginalIds = new Set(
    (
      await prisma.$queryRaw<
        { id: string }[]
      >`SELECT replaces_invoice_id AS id FROM invoices WHERE replaces_invoice_id IS NOT NULL`
    ).map((r) => r.id),
  );
  // Each refund's Egresos, and whether each names its payment's Ingreso UUID in CfdiRelacionados.
  const refunds = await prisma.$queryRaw<{ external_id: string; egresos: number; stamped: number; related: number }[]>`
    SELECT r.external_id, count(e.id)::int AS egresos,
           count(e.id) FILTER (WHERE e.status = 'stamped' AND e.uuid IS NOT NULL)::int AS stamped,
           count(e.id) FILTER (WHERE position('UUID="' || i.uuid || '"' IN e.frozen_xml) > 0)::int AS related
    FROM refunds r
    LEFT JOIN invoices e ON e.refund_id = r.id
    LEFT JOIN invoices i ON i.payment_id = r.payment_id AND i.kind = 'I'
    WHERE r.provider <> 'api:till' -- the tickets' refunds are checked with the tickets
    GROUP BY r.external_id`;
  const [attempts] = await prisma.$queryRaw<{ total: number; backup_stamps: number }[]>`
    SELECT count(*)::int AS total, count(*) FILTER (WHERE pac = 'backup' AND outcome IN ('stamped', 'already_stamped'))::int AS backup_stamps FROM pac_attempts`;
  const [dlq] = await prisma.$queryRaw<
    { failed: number }[]
  >`SELECT count(*)::int AS failed FROM outbox WHERE status = 'failed'`;
  // Tickets (global mode): each one's document, the globals and what they hold, the tickets' refunds.
  const ticketRows = await prisma.$queryRaw<
    {
      code: string;
      status: string;
      total: string;
      refunded: string;
      invoice_id: string | null;
      document_status: string | null;
      global_period_id: string | null;
      own_ingresos: number;
    }[]
  >`
    SELECT t.code, t.status, t.total::text, t.refunded::text, t.invoice_id, d.status::text AS document_status,
           d.global_period_id, (SELECT count(*) FROM invoices x WHERE x.payment_id = t.payment_id AND x.kind = 'I')::int AS own_ingresos
    FROM tickets t LEFT JOIN invoices d ON d.id = t.invoice_id`;
  const globals = await prisma.$queryRaw<
    {
      id: string;
      total: string;
      status: string;
      frozen_xml: string | null;
      global_period_id: string;
      tickets_net: string | null;
    }[]
  >`
    SELECT g.id, g.total::text, g.status::text, g.frozen_xml, g.global_period_id,
           (SELECT sum(t.total - t.refunded)::text FROM tickets t WHERE t.invoice_id = g.id) AS tickets_net
    FROM invoices g WHERE g.global_period_id IS NOT NULL`;
  const [periodsTwice] = await prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM global_periods GROUP BY organization_id, periodicidad, starts_on HAVING count(*) > 1) AS twice`;
  const ticketRefunds = await prisma.$queryRaw<
    { egreso: string | null; egreso_status: string | null; related: string | null; ticket_document: string | null }[]
  >`
    SELECT e.id AS egreso, e.status::text AS egreso_status, e.related_invoice_id AS related, t.invoice_id AS ticket_document
    FROM refunds r JOIN tickets t ON t.payment_id = r.payment_id LEFT JOIN invoices e ON e.refund_id = r.id`;
  // Platform mode: each organization's own figures, and what one's keys see of the others'.
  const organizationFigures =
    O > 1
      ? [...(await perOrganization(organizations, prisma, acked)), await crossings(apiUrl, organizations, prisma)]
      : [];
  await prisma.$disconnect();

  const inDb = new Map(payments.map((p) => [`${p.provider}|${p.external_id}`, p]));
  // What each payment must be recorded for: what was received (an authorization: what was captured).
  const wrongAmount = plan.filter((p) => {
    if (p.capture?.never) return false;
    const row = inDb.get(paymentKey(p));
    const expected = ((p.capture && !p.capture.never ? p.capture.centavos : p.centavos) / 100).toFixed(2);
    return row !== undefined && row.amount !== expected;
  }).length;
  const uncapturedInvoiced = uncaptured.filter((id) => inDb.has(`stripe|${id}`)).length;
  const failedRefundsRecorded = refunds.filter((r) => failedRefunds.has(r.external_id)).length;
  const lost = [...acked].filter((k) => !inDb.has(k));
  const exactlyOne = [...acked].filter((k) => inDb.get(k)?.invoices === 1 && inDb.get(k)?.stamped === 1).length;
  const ourUuids = new Set(invoices.flatMap((i) => (i.uuid ? [i.uuid.toUpperCase()] : [])));
  const orphans = ledger.stamps.filter((st) => !ourUuids.has(st.uuid.toUpperCase()));
  const uuidsPerKey = new Map<string, Set<string>>();
  for (const st of ledger.stamps)
    if (st.customid) uuidsPerKey.set(st.customid, (uuidsPerKey.get(st.customid) ?? new Set()).add(st.uuid));
  const duplicateStamps = ledger.duplicates.length + [...uuidsPerKey.values()].filter((u) => u.size > 1).length;
  const multiInvoice = payments.filter((p) => p.invoices > 1).length;
  const folioProblems = (() => {
    const bySerie = new Map<string, number[]>();
    // Each organization's series are its own: folios from 1 in each.
    for (const i of invoices)
      bySerie.set(`${i.org}|${i.serie}`, [...(bySerie.get(`${i.org}|${i.serie}`) ?? []), i.folio]);
    let problems = 0;
    for (const folios of bySerie.values()) {
      folios.sort((a, b) => a - b);
      for (let k = 1; k < folios.length; k++) if (folios[k] !== folios[k - 1]! + 1) problems++;
      if (folios.length > 0 && folios[0] !== 1) problems++;
    }
    return problems;
  })();
  // Every PAC call sent one of the document's versions, byte for byte (a correction makes a new one;
  // nothing rewrites one).
  const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
  const versionShas = new Map<string, Set<string>>();
  for (const v of versions) versionShas.set(v.stamp_key, (versionShas.get(v.stamp_key) ?? new Set()).add(sha(v.xml)));
  const changed = new Set(
    ledger.received
      .filter((r) => r.customid && versionShas.has(r.customid) && !versionShas.get(r.customid)!.has(r.xmlSha256))
      .map((r) => r.customid),
  ).size;
  // At most one version of an invoice stamped, across every PAC's ledger; none of a superseded one.
  const versionOf = new Map(versions.map((v) => [sha(v.cadena), v]));
  const stampedVersions = new Map<string, Set<number>>();
  let supersededStamped = 0;
  for (const st of ledger.stamps) {
    const v = versionOf.get(st.cadenaHash);
    if (!v) continue;
    stampedVersions.set(v.invoice_id, (stampedVersions.get(v.invoice_id) ?? new Set()).add(v.version));
    if (v.superseded) supersededStamped++;
  }
  const multiVersion = [...stampedVersions.values()].filter((set) => set.size > 1).length;
  const versioned = new Set(versions.filter((v) => v.superseded).map((v) => v.invoice_id)).size;
  const replacementsOk = replacements.filter(
    (r) => r.original_status === 'cancelled' && r.replacement_status === 'stamped' && r.ok === 1 && r.requests === 1,
  ).length;
  const recoveries = ledger.received.filter((r) => r.outcome === '307' || r.outcome === 'CFDI3307').length;
  const stampedCount = invoices.filter((i) => i.uuid).length;
  const runS = ((drainedAt || Date.now()) - loadStart) / 1000;

  // Cancellations: each acknowledged one cancelled once, in our database and at the SAT; nothing else.
  const cancels = await prisma.$queryRaw<
    { id: string; uuid: string | null; status: string; requests: number; cancelled: number }[]
  >`
    SELECT i.id, i.uuid, i.status, count(c.id)::int AS requests, count(c.id) FILTER (WHERE c.status = 'cancelled')::int AS cancelled
    FROM invoices i LEFT JOIN cancel_requests c ON c.invoice_id = i.id
    WHERE (i.status IN ('cancel_requested', 'cancelled') OR c.id IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM invoices r WHERE r.replaces_invoice_id = i.id)
    GROUP BY i.id, i.organization_id`;
  const cancelsOk = cancels.filter(
    (c) => ackedCancels.has(c.id) && c.status === 'cancelled' && c.requests === 1 && c.cancelled === 1,
  ).length;
  const replacedUuids = new Set(
    invoices.flatMap((i) => (i.uuid && replacedOriginalIds.has(i.id) ? [i.uuid.toUpperCase()] : [])),
  );
  const cancelledAtSat = new Set(
    ledger.stamps
      .filter((st) => st.cancellation && !replacedUuids.has(st.uuid.toUpperCase()))
      .map((st) => st.uuid.toUpperCase()),
  );
  const askedUuids = new Set(cancels.filter((c) => ackedCancels.has(c.id) && c.uuid).map((c) => c.uuid!.toUpperCase()));
  const unaskedAtSat = [...cancelledAtSat].filter((u) => !askedUuids.has(u)).length;
  const refundsOk = refunds.filter(
    (r) => ackedRefunds.has(r.external_id) && r.egresos === 1 && r.stamped === 1 && r.related === 1,
  ).length;
  const unacked = plan
    .filter((p) => !p.capture?.never && !acked.has(paymentKey(p)))
    .map((p) => `${providerOf(p)} ${p.externalId}`);
  const figures = [
    {
      figure: 'webhooks/requests acknowledged 2xx (distinct payments)',
      value:
        unacked.length === 0
          ? acked.size
          : `${acked.size} (not: ${unacked.slice(0, 5).join(', ')}${unacked.length > 5 ? ', …' : ''})`,
      must: `= ${paymentsExpected} made (and captured), all with rows`,
      ok: acked.size === paymentsExpected && lost.length === 0,
    },
    {
      figure: 'payments recorded for another amount than received (captured)',
      value: wrongAmount,
      must: '0',
      ok: wrongAmount === 0,
    },
    {
      figure: 'authorizations never captured that were recorded or invoiced',
      value: `${uncapturedInvoiced} of ${uncaptured.length}`,
      must: '0',
      ok: uncapturedInvoiced === 0,
    },
    { figure: 'acknowledged payments without rows (lost)', value: lost.length, must: '0', ok: lost.length === 0 },
    {
      figure: 'payments with exactly one stamped Ingreso',
      value: `${((100 * exactlyOne) / Math.max(1, acked.size)).toFixed(1)}% (${exactlyOne})`,
      must: '100%',
      ok: exactlyOne === acked.size && acked.size > 0,
    },
    {
      figure: 'orphan stamps (in the PAC ledger, not in our DB)',
      value: orphans.length,
      must: '0',
      ok: orphans.length === 0,
    },
    {
      figure: 'duplicate stamps (a cadena or a key with two UUIDs, one PAC or across)',
      value: duplicateStamps,
      must: '0',
      ok: duplicateStamps === 0,
    },
    { figure: 'payments with more than one Ingreso', value: multiInvoice, must: '0', ok: multiInvoice === 0 },
    { figure: 'folio gaps / repeats', value: folioProblems, must: '0', ok: folioProblems === 0 },
    { figure: 'frozen XML changed after first send', value: changed, must: '0', ok: changed === 0 },
    { figure: 'invoices in the dead-letter queue', value: dlq!.failed, must: '0', ok: dlq!.failed === 0 },
    {
      figure: 'cancellations acknowledged 2xx',
      value: ackedCancels.size,
      must: `= ${cancelsPlanned.length} sent`,
      ok: ackedCancels.size === cancelsPlanned.length,
    },
    {
      figure: 'cancellations done once (our DB and the SAT agree)',
      value: `${cancelsOk} of ${cancels.length}; SAT: ${cancelledAtSat.size} cancelled, ${unaskedAtSat} not asked for`,
      must: `all ${ackedCancels.size}; 0 not asked for${naive ? '' : '; at least one'}`,
      ok:
        (naive || ackedCancels.size > 0) &&
        cancelsOk === ackedCancels.size &&
        cancels.length === ackedCancels.size &&
        cancelledAtSat.size === ackedCancels.size &&
        unaskedAtSat === 0,
    },
    {
      figure: 'refunds acknowledged 2xx (distinct)',
      value: ackedRefunds.size,
      must: `= ${refundsPlanned.length} sent`,
      ok: ackedRefunds.size === refundsPlanned.length,
    },
    {
      figure: 'succeeded refunds with exactly one stamped Egreso, related to the Ingreso',
      value: `${refundsOk} of ${refunds.length} recorded`,
      must: `all ${ackedRefunds.size} acknowledged`,
      ok: refundsOk === ackedRefunds.size && refunds.length === ackedRefunds.size,
    },
    {
      figure: 'corrections (PATCH) answered; by outcome',
      value: `${corrections.raced.length} raced a stamp (${corrections.raced.filter((x) => x < 300).length} accepted), ${corrections.fixed.size} after a rejection; ${correctionRows.map((c) => `${c.status}${c.code ? `/${c.code}` : ''} ${c.n}`).join(', ') || 'none'}`,
      must: 'none proving',
      ok: correctionRows.every((c) => c.status !== 'proving'),
    },
    {
      figure: 'payments whose customer the PAC rejected, stamped after a correction',
      value: `${corrections.fixed.size} of ${wrongNames.length}`,
      must: `all ${wrongNames.length}`,
      ok: corrections.fixed.size === wrongNames.length,
    },
    {
      figure: 'invoices with more than one version stamped (any PAC)',
      value: `${multiVersion} (${versioned} invoices re-frozen)`,
      must: '0',
      ok: multiVersion === 0,
    },
    { figure: 'stamps of a superseded version', value: supersededStamped, must: '0', ok: supersededStamped === 0 },
    {
      figure: 'replacements: stamped, the original cancelled once (motivo 01 → its UUID)',
      value: `${replacementsOk} of ${replacements.length} (${corrections.replaced.size} acknowledged)`,
      must: naive ? 'all' : 'all; at least one',
      ok:
        replacementsOk === replacements.length &&
        replacements.length === corrections.replaced.size &&
        (naive || replacements.length > 0),
    },
    { figure: 'invoices left in needs_data', value: needsData!.n, must: '0', ok: needsData!.n === 0 },
    {
      figure: 'failed refunds recorded (or with an Egreso)',
      value: `${failedRefundsRecorded} of ${failedRefunds.size}`,
      must: '0',
      ok: failedRefundsRecorded === 0,
    },
  ];
  // Every stamped invoice's invoice.stamped webhook and (when its payment has an address) its email
  // arrived at least once; none arrived for an invoice never stamped.
  const stampedInvoices = await prisma.$queryRaw<{ id: string; email: string | null }[]>`
    SELECT i.id, p.email FROM invoices i LEFT JOIN payments p ON p.id = i.payment_id WHERE i.uuid IS NOT NULL`;
  const neverStamped = new Set(invoices.filter((i) => i.uuid === null).map((i) => i.id));
  const hooked = new Set(hooks.requests.filter((r) => r.type === 'invoice.stamped').map((r) => r.invoiceId));
  const mailed = new Set(
    mailbox.received
      .filter((m) => !m.parsed.subject?.startsWith('Cancelación'))
      .map((m) => {
        const id = m.parsed.headers.get('x-timbra-invoice-id');
        return typeof id === 'string' ? id : '';
      }),
  );
  const withoutHook = stampedInvoices.filter((i) => !hooked.has(i.id)).length;
  const withoutMail = stampedInvoices.filter((i) => i.email && !mailed.has(i.id)).length;
  const forUnstamped =
    hooks.requests.filter((r) => r.type === 'invoice.stamped' && r.invoiceId && neverStamped.has(r.invoiceId)).length +
    [...mailed].filter((id) => neverStamped.has(id)).length;
  const unverified = hooks.requests.filter((r) => !r.verified).length;
  const [deadDeliveries] = await prisma.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM deliveries WHERE status = 'dead'`;
  const redelivered = hooks.requests.length - new Set(hooks.requests.map((r) => r.eventId)).size;
  const crashes = all
    .filter((p) => p.unexpectedExits.length > 0)
    .map((p) => `${p.name} ${p.unexpectedExits.length}`)
    .join(', ');
  if (!naive)
    figures.push(
      {
        figure: 'stamped invoices without an invoice.stamped webhook',
        value: `${withoutHook} of ${stampedInvoices.length}`,
        must: '0',
        ok: withoutHook === 0 && stampedInvoices.length > 0,
      },
      {
        figure: 'stamped invoices with an address and no email',
        value: `${withoutMail} of ${stampedInvoices.filter((i) => i.email).length}`,
        must: '0',
        ok: withoutMail === 0,
      },
      {
        figure: 'webhooks or emails for an invoice never stamped',
        value: forUnstamped,
        must: '0',
        ok: forUnstamped === 0,
      },
      { figure: 'webhooks whose signature does not verify', value: unverified, must: '0', ok: unverified === 0 },
      {
        figure: 'deliveries dead or still open',
        value: `${deadDeliveries!.n} dead, ${Math.max(0, deliveriesOpen)} open`,
        must: '0',
        ok: deadDeliveries!.n === 0 && deliveriesOpen === 0,
      },
      ...(O > 1
        ? [
            ((): (typeof figures)[number] => {
              const pathOf = new Map(organizations.map((o) => [o.id, o.tag === 'home' ? '/hooks' : `/hooks/${o.tag}`]));
              const orgOf = new Map(invoices.map((i) => [i.id, i.org]));
              const elsewhere = hooks.requests.filter(
                (r) => r.invoiceId && orgOf.has(r.invoiceId) && pathOf.get(orgOf.get(r.invoiceId)!) !== r.path,
              ).length;
              const reached = new Set(hooks.requests.filter((r) => r.type === 'invoice.stamped').map((r) => r.path));
              return {
                figure: "invoices' webhooks at another organization's endpoint; endpoints that got their own",
                value: `${elsewhere}; ${reached.size} of ${O}`,
                must: `0; all ${O}`,
                ok: elsewhere === 0 && reached.size === O,
              };
            })(),
            ...organizationFigures,
          ]
        : []),
      // The supervisor restarts a process that crashes and every invariant may still hold, but in
      // production each is an outage of that process (the API on every Postgres restart, once).
      {
        figure: "processes that exited on their own (crashed; the log has each one's last lines)",
        value: crashes || 'none',
        must: 'none',
        ok: crashes === '',
      },
    );
  const stats = {
    variant: naive ? 'naive (deliberately broken)' : 'product',
    payments: N,
    deliveries: counters.deliveries,
    deliveryRetries: counters.deliveryRetries,
    clientTimeouts: counters.restTimeouts,
    stamped: stampedCount,
    stampedPerSecondOverTheRun: Number((stampedCount / runS).toFixed(1)),
    drainedSecondsAfterLastDelivery: drainedAt ? Number(((drainedAt - sentAt) / 1000).toFixed(1)) : 'not drained',
    pacAttempts: attempts!.total,
    retries: Math.max(0, attempts!.total - stampedCount),
    failoverStamps: attempts!.backup_stamps,
    recoveries307: recoveries,
    workerKills: counters.workerKills,
    redisKills: counters.redisKills,
    postgresCrashes: cluster ? counters.postgresCrashes : 'not run (--postgres shared)',
    ledgerStamps: ledger.stamps.length,
    webhookRequests: `${hooks.requests.length} (${hooks.requests.filter((r) => r.answered !== 200).length} failed or timed out, ${redelivered} events received more than once)`,
    emailAttempts: `${mailbox.attempts.length} (${mailbox.attempts.filter((a) => a.outcome === 'dropped').length} dropped, ${mailbox.attempts.filter((a) => a.outcome === 'refused').length} deferred, ${mailbox.received.length} accepted)`,
    tickets: naive
      ? 'not run (naive variant)'
      : `${T} (${ticketOutcomes.selfInvoiced} self-invoiced, ${ticketOutcomes.refused} refused on the page, ${ticketOutcomes.refunds} refunded), ${globals.length} globals`,
    // How many times each process was started: the kills really happened (and nothing ran twice).
    processStarts: all.map((p) => `${p.name} ${p.starts}`).join(', '),
    // Exits nobody asked for (crashes), by process; each is logged with its last lines as it happens.
    unexpectedExits: crashes || 'none',
  };
  if (!naive) {
    // Each ticket in exactly one stamped document: its own CFDI (and in no global) or its period's
    // global (and no CFDI of its own) — or none at all when refunded in full before its global.
    const codesIn = new Map(
      globals.map((g) => [g.id, [...(g.frozen_xml ?? '').matchAll(/NoIdentificacion="([^"]+)"/g)].map((m) => m[1]!)]),
    );
    const globalsHolding = (code: string) => globals.filter((g) => codesIn.get(g.id)!.includes(code)).length;
    const ticketOk = ticketRows.filter((t) => {
      if (t.status === 'self_invoiced')
        return (
          t.document_status === 'stamped' &&
          t.global_period_id === null &&
          t.own_ingresos === 1 &&
          globalsHolding(t.code) === 0
        );
      if (t.status === 'in_global')
        return (
          t.document_status === 'stamped' &&
          t.global_period_id !== null &&
          t.own_ingresos === 0 &&
          globalsHolding(t.code) === 1 &&
          codesIn.get(t.invoice_id!)!.includes(t.code)
        );
      if (t.status === 'refunded')
        return t.refunded === t.total && t.own_ingresos === 0 && globalsHolding(t.code) === 0;
      return false; // open: no document
    }).length;
    const wrongTotals = globals.filter(
      (g) => g.tickets_net === null || Number(g.tickets_net) * 100 !== Number(g.total) * 100,
    ).length;
    const refundsOkTickets = ticketRefunds.filter((r) =>
      r.egreso === null ? true : r.egreso_status === 'stamped' && r.related === r.ticket_document,
    ).length;
    figures.push(
      {
        figure: 'tickets in exactly one stamped document (own CFDI, or its period’s global; none if refunded in full)',
        value: `${ticketOk} of ${ticketRows.length}`,
        must: `all ${T} made`,
        ok: ticketOk === ticketRows.length && ticketRows.length === T,
      },
      {
        figure: 'global periods issued more than once',
        value: periodsTwice!.n,
        must: '0',
        ok: periodsTwice!.n === 0,
      },
      {
        figure: 'factura globals not stamped',
        value: globals.filter((g) => g.status !== 'stamped').length,
        must: '0',
        ok: globals.length > 0 && globals.every((g) => g.status === 'stamped'),
      },
      {
        figure: 'factura globals whose total is not the sum of their tickets (after refunds)',
        value: wrongTotals,
        must: '0',
        ok: wrongTotals === 0,
      },
      {
        figure: 'ticket refunds: before the global (no Egreso) or one stamped Egreso related to its document',
        value: `${refundsOkTickets} of ${ticketRefunds.length}`,
        must: `all ${ticketOutcomes.refunds} acknowledged`,
        ok: refundsOkTickets === ticketRefunds.length && ticketRefunds.length === ticketOutcomes.refunds,
      },
    );
  }
  // The last rows: the SAT's view of the whole run, after the planted orphan's adoption.
  figures.push(...(adoption ? [adoption] : []), ...satFigures);
  const violations = figures.filter((f) => !f.ok);
  const markdown = [
    `# Chaos run — ${new Date().toISOString()}`,
    '',
    `${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, node ${process.version}; --payments ${N} --duration ${durationS} --seed ${seed} --postgres ${values.postgres} --organizations ${O}${naive ? ' --variant naive' : ''}`,
    '',
    '| figure | value | must be | |',
    '|---|---|---|---|',
    ...figures.map((f) => `| ${f.figure} | ${f.value} | ${f.must} | ${f.ok ? 'ok' : '**FAILED**'} |`),
    '',
    '| also | |',
    '|---|---|',
    ...Object.entries(stats).map(([k, v]) => `| ${k} | ${v} |`),
    '',
  ].join('\n');
  process.stdout.write(`\n${markdown}\n`);
  const out = values.out ?? join(ROOT, '.chaos', new Date().toISOString().replaceAll(':', '-'));
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'chaos.md'), markdown);
  writeFileSync(
    join(out, 'chaos.json'),
    JSON.stringify({ figures, stats, orphans: orphans.slice(0, 20), lost: lost.slice(0, 20) }, null, 2),
  );
  log(`written to ${out}/chaos.{md,json}`);

  if (values['expect-violations']) {
    const caught = orphans.length + duplicateStamps > 0;
    log(
      caught
        ? 'the harness caught the broken variant (orphans or duplicates): as expected'
        : 'the broken variant was NOT caught',
    );
    exitCode = caught ? 0 : 1;
  } else {
    exitCode = violations.length === 0 ? 0 : 1;
    if (violations.length > 0) {
      log(`FAILED: ${violations.map((v) => v.figure).join('; ')}`);
      for (const p of all)
        if (p.tail.length > 0) log(`${p.name} (started ${p.starts}×), last lines:\n  ${p.tail.slice(-8).join('\n  ')}`);
    }
  }
} catch (error) {
  log(`FAILED: ${(error as Error).message}`);
  for (const p of all) if (p.tail.length > 0) log(`${p.name}, last lines:\n  ${p.tail.slice(-8).join('\n  ')}`);
} finally {
  supervising = false;
  await supervisor;
  await Promise.all(all.map((p) => p.stop('SIGTERM')));
  await Promise.all(all.map((p) => p.stop('SIGKILL')));
  receiver.closeAllConnections();
  receiver.close();
  await mailbox.close();
  if (cluster) cluster.remove();
  else await database.drop().catch(() => undefined);
}
process.exit(exitCode);
