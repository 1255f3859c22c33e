/**
 * The worker's settings (`workerSettings` of @timbra/settings, read by `loadConfig` in config.ts for
 * the worker process) and what the ops CLI reads of them (`loadOpsConfig`). Kept apart from config.ts so that `npm run ops` loads zod and this file, not the CFDI domain that the
 * worker's own start-up checks need (its emisor, CSD and catalogues).
 */
import { SANDBOX_PAC, withSecretFiles, workerSettings, type WorkerSettings } from '@timbra/settings';
import { redisConfigProblems } from '@timbra/db/redis';
import type { RetentionPolicy } from '@timbra/db/retention';

export const schema = workerSettings;

export type WorkerConfig = WorkerSettings;

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
      VAULT_KEYS: true,
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

/**
 * The settings of reconciliation with the SAT's record (the sweeper's job and `ops reconcile
 * --source sat`); the sandbox profile points Descarga Masiva at the local sandbox.
 */
export function loadSatRecordConfig(given: NodeJS.ProcessEnv) {
  const { env, problems } = withSecretFiles(given);
  const sandbox = env.TIMBRA_PROFILE === 'sandbox';
  const parsed = schema
    .pick({
      EFIRMA_DIR: true,
      VAULT_KEYS: true,
      SAT_DESCARGA_URL: true,
      SAT_LAG_MS: true,
      SAT_POLL_MS: true,
      SAT_WAIT_MAX_MS: true,
      SAT_RECONCILE_DAYS: true,
      SAT_RECONCILE_EVERY_MS: true,
    })
    .safeParse(sandbox ? { ...SANDBOX_PAC, ...env } : env);
  if (!parsed.success || problems.length > 0)
    throw new Error(
      `invalid configuration:\n${[...problems, ...(parsed.error?.issues ?? []).map((i) => `  ${i.path.join('.')}: ${i.message}`)].join('\n')}`,
    );
  return parsed.data;
}
