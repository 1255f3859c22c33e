/** The worker's own settings, section by section (it also reads every shared one: shared.ts). */
import { z } from 'zod';
import { bool, entry, section } from './define.ts';

const ms = (n: number) => z.coerce.number().int().positive().default(n);
const days = (n: number) => z.coerce.number().int().nonnegative().default(n);
const port = () => z.coerce.number().int().min(0).max(65535);

/** The local sandbox PAC's default account: what the sandbox profile fills in. */
export const SANDBOX_PAC = {
  PAC_PRIMARY_KIND: 'sw',
  PAC_PRIMARY_URL: 'http://127.0.0.1:4010',
  PAC_PRIMARY_USER: 'timbra',
  PAC_PRIMARY_PASSWORD: 'timbra-sandbox',
  SAT_STATUS_URL: 'http://127.0.0.1:4010/ConsultaCFDIService.svc',
  SAT_DESCARGA_URL: 'http://127.0.0.1:4010',
  SAT_LAG_MS: '60000',
  SAT_POLL_MS: '500',
} as const;

export const WORKER_PROCESS = section('Roles, health and shutdown', [
  entry(
    { WORKER_ROLES: z.string().default('relay,sweeper,stamper,deliverer') },
    'which parts run in this process, comma-separated (scale them apart); `deliverer` sends emails and webhooks',
  ),
  entry(
    { WORKER_CONCURRENCY: z.coerce.number().int().positive().default(8) },
    'PAC calls (stamps and cancellations) in flight per process, shared among organizations in turn',
  ),
  entry(
    { WORKER_HTTP_PORT: port().default(3001) },
    '`GET /healthz`, `GET /readyz`, `GET /metrics` (0: off): stamp attempts by PAC and outcome, stamp latency, failovers, circuit state, outbox backlog and the oldest pending age, DLQ size',
  ),
  entry(
    { WORKER_HTTP_HOST: z.string().default('127.0.0.1') },
    'the interface of that port: loopback by default; `0.0.0.0` in a container whose orchestrator probes it from outside',
  ),
  entry({ WORKER_STALL_MS: ms(120_000) }, '`/readyz` fails when jobs wait and none was consumed for this long'),
  entry(
    { WORKER_SHUTDOWN_TIMEOUT_MS: ms(30_000) },
    "on SIGTERM or SIGINT the worker stops claiming and finishes its jobs; past this it logs what it still waited on (e.g. the queue's close, Redis unreachable) and exits 1 — the jobs left are retried, the PAC answers a re-sent stamp with the same UUID",
  ),
  entry({ ALERT_WEBHOOK_URL: z.string().url().optional() }, 'dead letters are POSTed here'),
]);

const pac = (name: 'PRIMARY' | 'BACKUP' | 'TEST') =>
  ({
    [`PAC_${name}_KIND`]: z.enum(['sw', 'finkok']).optional(),
    [`PAC_${name}_URL`]: z.string().url().optional(),
    [`PAC_${name}_USER`]: z.string().optional(),
    [`PAC_${name}_PASSWORD`]: z.string().optional(),
  }) as Record<`PAC_${typeof name}_${'KIND' | 'URL' | 'USER' | 'PASSWORD'}`, z.ZodOptional<z.ZodString>>;

export const WORKER_STAMPING = section('Relaying and stamping', [
  entry(
    { RELAY_BATCH_SIZE: z.coerce.number().int().positive().default(100), RELAY_POLL_MS: ms(1000) },
    'outbox rows per claim; fallback poll interval (a new row wakes the relay at once)',
  ),
  entry(
    { STAMP_JOB_GROUPS: bool.default(true) },
    "each relay claim's stamp rows go to the queue as one `stamp-group` job (BullMQ's commands a job shared by the claim's payments: [performance.md](performance.md)); a row whose attempt there fails goes on as a `stamp` job of its own, with the usual retries and dead letter; `false`: a `stamp` job a row",
  ),
  entry(
    { RELAY_MAX_ENQUEUED_PER_ORGANIZATION: z.coerce.number().int().min(0).default(200) },
    "each organization's share of the stamp queue: the relay keeps at most this many of its jobs enqueued (counting those enqueued in the last minute), and the rest of its backlog waits in Postgres, so another organization's payment is not queued behind it ([organizations.md](organizations.md#fairness)); while a share is full the relay looks again every 100 ms; 0: no limit",
  ),
  entry(
    pac('PRIMARY'),
    '`sw` or `finkok`, its address and account',
    'required; sandbox: `sw`, `http://127.0.0.1:4010`, `timbra`, `timbra-sandbox`',
  ),
  entry(
    pac('BACKUP'),
    'an optional second PAC, used when the first is down and it is safe to fail over ([reliability.md](reliability.md))',
  ),
  entry(
    pac('TEST'),
    "the PAC that stamps test organizations' documents (their keys are `tk_test_…`: [organizations.md](organizations.md#test-and-live)): the sandbox PAC, or a PAC's test account — never a live PAC (in production the worker refuses the address of `PAC_PRIMARY_URL` or `PAC_BACKUP_URL`). Unset, their documents wait in the outbox, each attempt logged, and never reach a PAC",
    'none; sandbox: the primary PAC (the local sandbox)',
  ),
  entry(
    { PAC_CONNECT_TIMEOUT_MS: ms(5000), PAC_RESPONSE_TIMEOUT_MS: ms(30_000) },
    "a PAC call's connect and response timeouts; a timeout is ambiguous: the same bytes are sent again",
  ),
  entry(
    { CIRCUIT_THRESHOLD: z.coerce.number().int().positive().default(5), CIRCUIT_COOLDOWN_MS: ms(30_000) },
    "consecutive not-processed failures that open a PAC's circuit; probe after",
  ),
  entry(
    {
      STAMP_ATTEMPTS: z.coerce.number().int().positive().default(20),
      STAMP_BACKOFF_BASE_MS: ms(2000),
      STAMP_BACKOFF_MAX_MS: ms(900_000),
    },
    'retries before the dead-letter queue; first delay, doubling, capped, ±50% jitter',
  ),
  entry({ STAMP_LOCK_MS: ms(30_000) }, 'BullMQ job lock: a job whose worker died is picked up by another after it'),
  entry(
    { SWEEPER_INTERVAL_MS: ms(60_000), SWEEPER_STALE_MS: ms(300_000) },
    'how often, and after how long an enqueued row whose job Redis lost is re-published',
  ),
  entry(
    {
      SAT_STATUS_URL: z
        .string()
        .url()
        .default('https://consultaqr.facturaelectronica.sat.gob.mx/ConsultaCFDIService.svc'),
    },
    "the SAT's CFDI status service: cancellations' outcomes and status lookups",
    "the SAT's ConsultaCFDIService (`https://consultaqr.facturaelectronica.sat.gob.mx/…`); sandbox: the sandbox PAC's",
  ),
]);

export const WORKER_CORRECTIONS = section('Cancellations and corrections', [
  entry(
    { CANCEL_POLL_BASE_MS: ms(5000), CANCEL_POLL_MAX_MS: ms(3_600_000) },
    'while a cancellation is in process at the SAT (En proceso: waiting for the receptor), how often to ask: first delay, doubling, capped',
  ),
  entry(
    { CORRECTION_POLL_MS: ms(2_000) },
    'how often the worker (role `sweeper`) looks for corrections whose proof is due',
  ),
  entry(
    { CORRECTION_RETRY_BASE_MS: ms(5_000), CORRECTION_RETRY_MAX_MS: ms(600_000) },
    'a correction whose PAC could not answer is asked again after this, doubling',
  ),
  entry(
    { PROOF_IN_FLIGHT_GRACE_MS: z.coerce.number().int().nonnegative().default(120_000) },
    'a PAC call recorded in flight younger than this may still reach the PAC: a correction waits for it (keep it above the PAC timeouts)',
  ),
  entry(
    { AUTO_REFREEZE_LATE: bool.default(false) },
    "the operator's switch: the worker itself corrects each late invoice (same data, a fresh Fecha), after the same proof as any correction",
  ),
]);

export const WORKER_GLOBALS = section('Facturas globales', [
  entry(
    {
      GLOBAL_CLOSE_DELAY_MINUTES: z.coerce
        .number()
        .int()
        .min(0)
        .max(24 * 60)
        .default(60),
    },
    "how long after a period ends its factura global is issued, so late webhooks of its sales still join it (the SAT allows 72 h); the worker's sweeper role issues every period with open tickets that ended this long ago ([publico-general.md](publico-general.md))",
  ),
  entry(
    { GLOBAL_CLOSE_POLL_SECONDS: z.coerce.number().int().positive().default(60) },
    'how often the sweeper role looks for periods to close and sets `timbra_global_period_lag_seconds` (several workers: still one global per period)',
  ),
]);

export const WORKER_RETENTION = section('Retention', [
  entry(
    {
      RETENTION_OUTBOX_DONE_DAYS: days(30),
      RETENTION_PAC_ATTEMPTS_DAYS: days(180),
      RETENTION_WEBHOOK_EVENTS_DAYS: days(30),
    },
    'what the sweeper role forgets, in days (`0`: keep for ever): outbox rows done that long ago (not re-driven ones), PAC calls of invoices with no open outbox row, provider events except failed ones. Invoices, versions, payments and cancellations are never deleted: the CFF (art. 30) has them kept five years from the tax return ([ARCHITECTURE.md](../ARCHITECTURE.md#history-and-retention))',
  ),
  entry(
    { RETENTION_INTERVAL_MS: ms(3_600_000), RETENTION_BATCH_SIZE: z.coerce.number().int().positive().default(5_000) },
    'how often the sweeper role prunes (first a minute after start), and rows per `DELETE`; each pass logs `history_pruned` and sets `timbra_history_prune_last_success_timestamp_seconds`',
  ),
]);

export const WORKER_DELIVERIES = section("Customers' emails and merchants' webhooks", [
  entry(
    { SMTP_URL: z.string().url().optional() },
    "the customers' emails: `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://…:465`. Unset: emails wait, counted",
  ),
  entry(
    { EMAIL_FROM: z.string().min(3).optional(), EMAIL_REPLY_TO: z.string().optional() },
    'the From (`Name <address>`; its domain names the Message-IDs) and an optional Reply-To',
    'required with `SMTP_URL`; sandbox: `Facturación <facturas@timbra.test>`',
  ),
  entry({ EMAIL_TIMEOUT_MS: ms(30_000) }, 'connect, greeting and socket timeout of one SMTP attempt'),
  entry(
    {
      EMAIL_RETRY_BASE_MS: ms(30_000),
      EMAIL_RETRY_MAX_MS: ms(3_600_000),
      EMAIL_RETRY_FOR_HOURS: z.coerce.number().positive().default(48),
    },
    "an email's retries: first delay, doubling to the cap (±50% jitter); dead (replayable) after this long (a 5xx reply: at once)",
  ),
  entry({ WEBHOOK_TIMEOUT_MS: ms(10_000) }, 'a receiver must answer within this'),
  entry(
    {
      WEBHOOK_RETRY_BASE_MS: ms(30_000),
      WEBHOOK_RETRY_MAX_MS: ms(6 * 3_600_000),
      WEBHOOK_RETRY_FOR_HOURS: z.coerce.number().positive().default(72),
    },
    "a webhook's retries: 30 s doubling to 6 h, for 3 days, then dead (replayable)",
  ),
  entry(
    {
      WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().nonnegative().default(120),
      WEBHOOK_DISABLE_MIN_FAILURES: z.coerce.number().int().positive().default(20),
    },
    'an endpoint failing without a 2xx this long and this many attempts in a row is disabled (alert)',
  ),
  entry(
    {
      DELIVERY_CONCURRENCY: z.coerce.number().int().positive().default(20),
      DELIVERY_POLL_MS: ms(1000),
      DELIVERY_LEASE_MS: ms(120_000),
    },
    "deliveries in flight at once per worker and organization (a slot is refilled as soon as a send ends: a slow endpoint holds one; each organization has its own), how often to look for due ones, and a claim's lease (a worker that died mid-send loses it after this)",
  ),
]);

export const WORKER_SAT_RECORD = section("Reconciliation with the SAT's record", [
  entry(
    { EFIRMA_DIR: z.string().optional() },
    "where an organization's e.firma (FIEL) is read from when none is stored for it (`ops efirma:upload`, sealed with `VAULT_KEYS`), as secret files: `<RFC>.cer`, `<RFC>.key` and `<RFC>.password` (the key's password). Descarga Masiva authenticates with it; an organization with neither is not reconciled ([sat-record.md](sat-record.md))",
    'none: only stored e.firmas',
  ),
  entry(
    { SAT_DESCARGA_URL: z.union([z.literal('sat'), z.string().url()]).default('sat') },
    "Descarga Masiva: `sat` (the SAT's own four endpoints) or one base URL serving the SAT's paths",
    '`sat`; sandbox: the sandbox PAC (`http://127.0.0.1:4010`)',
  ),
  entry(
    {
      SAT_RECONCILE_EVERY_MS: z.coerce.number().int().nonnegative().default(86_400_000),
      SAT_RECONCILE_DAYS: z.coerce.number().int().positive().max(365).default(7),
    },
    'how often the worker (role `sweeper`) reconciles each organization with an e.firma (0: never; `npm run ops -- reconcile --source sat` runs one now), and over how many days back',
  ),
  entry(
    { SAT_LAG_MS: z.coerce.number().int().nonnegative().default(259_200_000) },
    "how long after its stamp a CFDI may be absent from the SAT's record before it is called missing (PACs report to the SAT within 72 hours)",
    '72 hours; sandbox: 1 minute',
  ),
  entry(
    { SAT_POLL_MS: ms(30_000), SAT_WAIT_MAX_MS: ms(21_600_000) },
    "a Descarga Masiva request is verified after this, doubling up to 10 minutes, until the SAT decides it or this long has passed (the SAT's may take hours)",
  ),
]);

/** The worker's own sections. */
export const WORKER_SECTIONS = [
  WORKER_PROCESS,
  WORKER_STAMPING,
  WORKER_CORRECTIONS,
  WORKER_GLOBALS,
  WORKER_RETENTION,
  WORKER_DELIVERIES,
  WORKER_SAT_RECORD,
] as const;
