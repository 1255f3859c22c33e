import type { Logger } from 'pino';
import { runPeriodically } from './periodic.ts';
import type { PrismaClient } from '@timbra/db';
import type { EachOrganization } from '../organizations/across.ts';
import { purgeExpiredIdempotencyKeys } from '@timbra/db/keys';
import { pruneHistory, type RetentionPolicy, type RetentionTable } from '@timbra/db/retention';

export interface RetentionDeps {
  /** Visits each organization (platform mode: every one; else the home one), on its own client. */
  each: EachOrganization;
  policy: RetentionPolicy;
  batchSize: number;
  logger: Logger;
  /** Told what each pass deleted over every organization, when it succeeded for every one. */
  onPass?: (deleted: Record<RetentionTable, number>) => void;
}

/**
 * One pass of the retention rules (packages/db/src/retention.ts owns them) over one organization:
 * what went, per table, logged as `history_pruned` with how long it took. Expired Idempotency-Key
 * records go in the same pass (their TTL, IDEMPOTENCY_TTL_HOURS, is the API's; an expired one is
 * already ignored).
 */
export async function pruneOnce(
  prisma: PrismaClient,
  deps: Omit<RetentionDeps, 'each' | 'onPass'>,
  organizationId: string,
): Promise<Record<RetentionTable, number>> {
  const started = Date.now();
  const log = deps.logger.child({ organization: organizationId });
  const deleted = await pruneHistory(prisma, deps.policy, {
    batchSize: deps.batchSize,
    onBatch: (table, n) => log.debug({ table, deleted: n }, 'history prune batch'),
  });
  const idempotencyKeys = await purgeExpiredIdempotencyKeys(prisma);
  const total = Object.values(deleted).reduce((a, b) => a + b, idempotencyKeys);
  log[total > 0 ? 'info' : 'debug'](
    { deleted, expiredIdempotencyKeys: idempotencyKeys, ms: Date.now() - started },
    'history_pruned',
  );
  return deleted;
}

/** A pass over every organization; `onPass` hears the sum when none failed. */
export async function pruneEveryOrganization(deps: RetentionDeps): Promise<Record<RetentionTable, number>> {
  const { results, failed } = await deps.each('history prune', (org) =>
    pruneOnce(org.prisma, deps, org.organizationId),
  );
  const sum = {} as Record<RetentionTable, number>;
  for (const deleted of results)
    for (const [table, n] of Object.entries(deleted) as [RetentionTable, number][]) sum[table] = (sum[table] ?? 0) + n;
  if (failed === 0) deps.onPass?.(sum);
  return sum;
}

/** Runs a pass a minute after start, then every `intervalMs`, until stopped. One pass at a time. */
export function runRetention(deps: RetentionDeps, options: { intervalMs: number; firstAfterMs?: number }) {
  return runPeriodically(
    () => pruneEveryOrganization(deps),
    (error) => deps.logger.error({ err: error }, 'history prune failed'),
    options,
  );
}
