import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import { purgeExpiredIdempotencyKeys } from '@timbra/db/keys';
import { pruneHistory, type RetentionPolicy, type RetentionTable } from '@timbra/db/retention';

export interface RetentionDeps {
  prisma: PrismaClient;
  policy: RetentionPolicy;
  batchSize: number;
  logger: Logger;
  /** Told what each pass deleted, and that it succeeded. */
  onPass?: (deleted: Record<RetentionTable, number>) => void;
}

/**
 * One pass of the retention rules (packages/db/src/retention.ts owns them): what went, per table,
 * logged as `history_pruned` with how long it took. Expired Idempotency-Key records go in the same
 * pass (their TTL, IDEMPOTENCY_TTL_HOURS, is the API's; an expired one is already ignored).
 */
export async function pruneOnce(deps: RetentionDeps): Promise<Record<RetentionTable, number>> {
  const started = Date.now();
  const deleted = await pruneHistory(deps.prisma, deps.policy, {
    batchSize: deps.batchSize,
    onBatch: (table, n) => deps.logger.debug({ table, deleted: n }, 'history prune batch'),
  });
  deps.onPass?.(deleted);
  const idempotencyKeys = await purgeExpiredIdempotencyKeys(deps.prisma);
  const total = Object.values(deleted).reduce((a, b) => a + b, idempotencyKeys);
  deps.logger[total > 0 ? 'info' : 'debug'](
    { deleted, expiredIdempotencyKeys: idempotencyKeys, ms: Date.now() - started },
    'history_pruned',
  );
  return deleted;
}

/** Runs a pass a minute after start, then every `intervalMs`, until stopped. One pass at a time. */
export function runRetention(deps: RetentionDeps, options: { intervalMs: number; firstAfterMs?: number }) {
  let running = false;
  const pass = () => {
    if (running) return;
    running = true;
    pruneOnce(deps)
      .catch((error: unknown) => deps.logger.error({ err: error }, 'history prune failed'))
      .finally(() => (running = false));
  };
  const first = setTimeout(pass, options.firstAfterMs ?? 60_000);
  const timer = setInterval(pass, options.intervalMs);
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
