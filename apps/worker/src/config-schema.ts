/**
 * The worker's settings: every variable, its type and default (the one schema, read by `loadConfig`
 * in config.ts for the worker process), and what the ops CLI reads of them (`loadOpsConfig`). Kept
 * apart from config.ts so that `npm run ops` loads zod and this file, not the CFDI domain that the
 * worker's own start-up checks need (its emisor, CSD and catalogues).
 */
import { z } from 'zod';
import {
  bool,
  DATA_SETTINGS,
  EMISOR_SETTINGS,
  OUTBOUND_SETTINGS,
  PROCESS_SETTINGS,
  withSecretFiles,
} from '@timbra/settings';
import { redisConfigProblems } from '@timbra/db/redis';
import type { RetentionPolicy } from '@timbra/db/retention';

const pac = (name: string) => ({
  [`PAC_${name}_KIND`]: z.enum(['sw', 'finkok']).optional(),
  [`PAC_${name}_URL`]: z.string().url().optional(),
  [`PAC_${name}_USER`]: z.string().optional(),
  /** Secret: no default, never logged. */
  [`PAC_${name}_PASSWORD`]: z.string().optional(),
});

export const schema = z.object({
  ...DATA_SETTINGS,
  ...PROCESS_SETTINGS,
  ...EMISOR_SETTINGS,
  ...OUTBOUND_SETTINGS,
  /** Which parts this process runs: any of relay, sweeper, stamper, deliverer (comma-separated). */
  WORKER_ROLES: z.string().default('relay,sweeper,stamper,deliverer'),
  WORKER_CONCURRENCY: z.coerce.number().int().positive().default(8),
  RELAY_BATCH_SIZE: z.coerce.number().int().positive().default(100),
  RELAY_POLL_MS: z.coerce.number().int().positive().default(1000),
  /** While a cancellation is in process at the SAT, how often to look: first delay, doubling, capped. */
  CANCEL_POLL_BASE_MS: z.coerce.number().int().positive().default(5000),
  CANCEL_POLL_MAX_MS: z.coerce.number().int().positive().default(3_600_000),
  SWEEPER_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  SWEEPER_STALE_MS: z.coerce.number().int().positive().default(300_000),
  /** Retention (packages/db/src/retention.ts): days a done outbox row is kept; 0 keeps it for ever. */
  RETENTION_OUTBOX_DONE_DAYS: z.coerce.number().int().nonnegative().default(30),
  /** Days a PAC call is kept once its invoice has no open outbox row; 0 keeps it for ever. */
  RETENTION_PAC_ATTEMPTS_DAYS: z.coerce.number().int().nonnegative().default(180),
  /** Days a provider's webhook event (not a failed one) is kept; 0 keeps it for ever. */
  RETENTION_WEBHOOK_EVENTS_DAYS: z.coerce.number().int().nonnegative().default(30),
  /** How often the sweeper role prunes, and how many rows a statement deletes. */
  RETENTION_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  RETENTION_BATCH_SIZE: z.coerce.number().int().positive().default(5_000),
  CORRECTION_POLL_MS: z.coerce.number().int().positive().default(2_000),
  CORRECTION_RETRY_BASE_MS: z.coerce.number().int().positive().default(5_000),
  CORRECTION_RETRY_MAX_MS: z.coerce.number().int().positive().default(600_000),
  PROOF_IN_FLIGHT_GRACE_MS: z.coerce.number().int().nonnegative().default(120_000),
  AUTO_REFREEZE_LATE: bool.default(false),
  /** How long a job's lock lives without renewal; a worker that died loses its jobs after this. */
  STAMP_LOCK_MS: z.coerce.number().int().positive().default(30_000),
  STAMP_ATTEMPTS: z.coerce.number().int().positive().default(20),
  STAMP_BACKOFF_BASE_MS: z.coerce.number().int().positive().default(2000),
  STAMP_BACKOFF_MAX_MS: z.coerce.number().int().positive().default(900_000),
  PAC_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  PAC_RESPONSE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  CIRCUIT_THRESHOLD: z.coerce.number().int().positive().default(5),
  CIRCUIT_COOLDOWN_MS: z.coerce.number().int().positive().default(30_000),
  /** The SAT's CFDI status service (production default) — the sandbox's in the sandbox profile. */
  SAT_STATUS_URL: z.string().url().default('https://consultaqr.facturaelectronica.sat.gob.mx/ConsultaCFDIService.svc'),
  ...pac('PRIMARY'),
  ...pac('BACKUP'),
  /** Port of /healthz, /readyz and /metrics (0: off). */
  WORKER_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  /** Interface of that port: loopback unless told otherwise (a container's orchestrator: 0.0.0.0). */
  WORKER_HTTP_HOST: z.string().default('127.0.0.1'),
  /** Not ready when jobs wait and none was consumed for this long. */
  WORKER_STALL_MS: z.coerce.number().int().positive().default(120_000),
  /** On SIGTERM/SIGINT: exit 1, saying what it still waited on, when the shutdown takes longer than this. */
  WORKER_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  ALERT_WEBHOOK_URL: z.string().url().optional(),
  /** Emails to customers (secret: it holds the password), e.g. smtp://user:pass@smtp.example.com:587. Unset: emails wait, loudly. */
  SMTP_URL: z.string().url().optional(),
  /** The From of the customer's emails, `Name <address>`. */
  EMAIL_FROM: z.string().min(3).optional(),
  EMAIL_REPLY_TO: z.string().optional(),
  EMAIL_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  EMAIL_RETRY_BASE_MS: z.coerce.number().int().positive().default(30_000),
  EMAIL_RETRY_MAX_MS: z.coerce.number().int().positive().default(3_600_000),
  /** An email still failing this long after its event is dead (replayable). */
  EMAIL_RETRY_FOR_HOURS: z.coerce.number().positive().default(48),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().positive().default(30_000),
  WEBHOOK_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(6 * 3_600_000),
  /** A webhook still failing this long after its event is dead (replayable). */
  WEBHOOK_RETRY_FOR_HOURS: z.coerce.number().positive().default(72),
  /** An endpoint failing without a success for this long, and this many attempts in a row, is disabled. */
  WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().nonnegative().default(120),
  WEBHOOK_DISABLE_MIN_FAILURES: z.coerce.number().int().positive().default(20),
  /** Deliveries in flight at once per worker (a slot is refilled as soon as a send ends). */
  DELIVERY_CONCURRENCY: z.coerce.number().int().positive().default(20),
  DELIVERY_POLL_MS: z.coerce.number().int().positive().default(1000),
  /** A delivery's claim lasts this long: a worker that died mid-send loses it after this. */
  DELIVERY_LEASE_MS: z.coerce.number().int().positive().default(120_000),
});

/** Every variable the configuration reads (docs/configuration.md lists each). */
export const WORKER_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type WorkerConfig = z.output<typeof schema>;

/** The retention rules' settings (packages/db/src/retention.ts), for the sweeper role and `ops history:prune`. */
export function retentionPolicy(
  c: Pick<WorkerConfig, 'RETENTION_OUTBOX_DONE_DAYS' | 'RETENTION_PAC_ATTEMPTS_DAYS' | 'RETENTION_WEBHOOK_EVENTS_DAYS'>,
): RetentionPolicy {
  return {
    outboxDoneDays: c.RETENTION_OUTBOX_DONE_DAYS,
    pacAttemptsDays: c.RETENTION_PAC_ATTEMPTS_DAYS,
    webhookEventsDays: c.RETENTION_WEBHOOK_EVENTS_DAYS,
  };
}

/**
 * What `npm run ops` needs, read as the worker reads its own (secret files, the same names and
 * defaults): the database, and Redis for settling the dead-letter queue after a re-drive.
 */
export function loadOpsConfig(given: NodeJS.ProcessEnv) {
  const { env, problems } = withSecretFiles(given);
  const parsed = schema
    .pick({
      DATABASE_URL: true,
      REDIS_URL: true,
      REDIS_CLUSTER: true,
      QUEUE_PREFIX: true,
      RETENTION_OUTBOX_DONE_DAYS: true,
      RETENTION_PAC_ATTEMPTS_DAYS: true,
      RETENTION_WEBHOOK_EVENTS_DAYS: true,
      RETENTION_BATCH_SIZE: true,
    })
    .safeParse(env);
  if (parsed.success)
    problems.push(
      ...redisConfigProblems(parsed.data.REDIS_URL, parsed.data.REDIS_CLUSTER, parsed.data.QUEUE_PREFIX).map(
        (p) => `  ${p}`,
      ),
    );
  if (!parsed.success || problems.length > 0)
    throw new Error(
      `invalid ops configuration:\n${[...problems, ...(parsed.error?.issues ?? []).map((i) => `  ${i.path.join('.')}: ${i.message}`)].join('\n')}` +
        "\n  (the worker's settings: DATABASE_URL is required, e.g. postgresql://postgres@127.0.0.1:5432/timbra for `npm run dev`)",
    );
  return parsed.data;
}
