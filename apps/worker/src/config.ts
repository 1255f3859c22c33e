import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const DEFAULT_SAT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../sat');

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');

const pac = (name: string) => ({
  [`PAC_${name}_KIND`]: z.enum(['sw', 'finkok']).optional(),
  [`PAC_${name}_URL`]: z.string().url().optional(),
  [`PAC_${name}_USER`]: z.string().optional(),
  /** Secret: no default, never logged. */
  [`PAC_${name}_PASSWORD`]: z.string().optional(),
});

const schema = z.object({
  DATABASE_URL: z.string().url(),
  DATABASE_POOL_SIZE: z.coerce.number().int().positive().default(10),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /** BullMQ key prefix; keep the `{…}` hash tag for Redis Cluster. */
  QUEUE_PREFIX: z.string().default('{timbra}'),
  /** Which parts this process runs: any of relay, sweeper, stamper (comma-separated). */
  WORKER_ROLES: z.string().default('relay,sweeper,stamper'),
  WORKER_CONCURRENCY: z.coerce.number().int().positive().default(8),
  RELAY_BATCH_SIZE: z.coerce.number().int().positive().default(100),
  RELAY_POLL_MS: z.coerce.number().int().positive().default(1000),
  /** While a cancellation is in process at the SAT, how often to look: first delay, doubling, capped. */
  CANCEL_POLL_BASE_MS: z.coerce.number().int().positive().default(5000),
  CANCEL_POLL_MAX_MS: z.coerce.number().int().positive().default(3_600_000),
  SWEEPER_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  SWEEPER_STALE_MS: z.coerce.number().int().positive().default(300_000),
  /** How long a job's lock lives without renewal; a worker that died loses its jobs after this. */
  STAMP_LOCK_MS: z.coerce.number().int().positive().default(30_000),
  STAMP_ATTEMPTS: z.coerce.number().int().positive().default(20),
  STAMP_BACKOFF_BASE_MS: z.coerce.number().int().positive().default(2000),
  STAMP_BACKOFF_MAX_MS: z.coerce.number().int().positive().default(900_000),
  PAC_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  PAC_RESPONSE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  CIRCUIT_THRESHOLD: z.coerce.number().int().positive().default(5),
  CIRCUIT_COOLDOWN_MS: z.coerce.number().int().positive().default(30_000),
  SAT_STATUS_URL: z.string().url().default('http://127.0.0.1:4010/ConsultaCFDIService.svc'),
  ...pac('PRIMARY'),
  ...pac('BACKUP'),
  /** Allow a Redis whose maxmemory-policy is not noeviction (managed Redis), with a loud warning. */
  ALLOW_EVICTING_REDIS: bool.default(false),
  /** Port of /healthz and /readyz (0: off). */
  WORKER_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
  /** Not ready when jobs wait and none was consumed for this long. */
  WORKER_STALL_MS: z.coerce.number().int().positive().default(120_000),
  ALERT_WEBHOOK_URL: z.string().url().optional(),
  /** The emisor's CSD, to freeze dependent documents (Egreso, Pago) once their invoice is stamped. */
  EMISOR_RFC: z.string().default('EKU9003173C9'),
  SAT_DIR: z.string().default(DEFAULT_SAT_DIR),
  CSD_CER_PATH: z.string().optional(),
  CSD_KEY_PATH: z.string().optional(),
  CSD_PASSWORD: z.string().optional(),
  CSD_PASSWORD_FILE: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Every variable the configuration reads (the README's configuration table lists each). */
export const WORKER_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type WorkerConfig = z.output<typeof schema>;

export interface PacConfig {
  name: 'primary' | 'backup';
  kind: 'sw' | 'finkok';
  url: string;
  user: string;
  password: string;
}

/**
 * Reads the worker's configuration. The primary PAC defaults to the local sandbox (so a fresh setup
 * works with no accounts); the backup is optional. Throws listing every problem.
 */
export function loadConfig(env: NodeJS.ProcessEnv): { config: WorkerConfig; pacs: PacConfig[] } {
  const withDefaults = {
    PAC_PRIMARY_KIND: 'sw',
    PAC_PRIMARY_URL: 'http://127.0.0.1:4010',
    PAC_PRIMARY_USER: 'timbra',
    PAC_PRIMARY_PASSWORD: 'timbra-sandbox',
    ...env,
  };
  const parsed = schema.safeParse(withDefaults);
  if (!parsed.success) {
    throw new Error(
      `invalid worker configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`,
    );
  }
  const c = parsed.data as WorkerConfig & Record<string, string | undefined>;
  const pacs: PacConfig[] = [];
  for (const name of ['primary', 'backup'] as const) {
    const p = `PAC_${name.toUpperCase()}`;
    const kind = c[`${p}_KIND`] as 'sw' | 'finkok' | undefined;
    const url = c[`${p}_URL`];
    if (!kind || !url) continue;
    pacs.push({ name, kind, url, user: c[`${p}_USER`] ?? '', password: c[`${p}_PASSWORD`] ?? '' });
  }
  return { config: parsed.data, pacs };
}
