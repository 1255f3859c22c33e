import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import { jobIdFor, republishEnqueuedOutboxRows, staleEnqueuedOutboxRows } from '@timbra/db/outbox';
import type { StampQueueData } from './jobs.ts';

export interface SweeperDeps {
  prisma: PrismaClient;
  queue: Queue<StampQueueData>;
  /** A row enqueued longer than this whose job is gone is published again. */
  staleMs: number;
  batchSize: number;
  logger: Logger;
  /** Freezes dependents whose invoice is stamped but were left waiting (a worker died in between). */
  freezeOverdue?: () => Promise<number>;
  /** Requests the cancellation of invoices whose replacement is stamped but which were left standing. */
  cancelReplaced?: () => Promise<number>;
  /** Settles stamp-dlq letters whose row is no longer dead (a re-drive made while Redis was away). */
  settleDeadLetters?: () => Promise<number>;
}

/**
 * Redis is not the source of truth. The sweeper finds outbox rows `enqueued` for longer than
 * `staleMs` whose job no longer exists in BullMQ (Redis flushed, restarted without persistence, job
 * evicted) — or exists but finished, which a row still enqueued cannot be waiting for — and puts
 * them back to `pending`, so the relay publishes them again. The stamp key being
 * the job id and the PAC's idempotency make a second publication harmless.
 */
export class Sweeper {
  constructor(private readonly deps: SweeperDeps) {}

  /** One pass; returns how many rows it put back (plus dependents it froze). */
  async sweepOnce(): Promise<number> {
    const frozen = this.deps.freezeOverdue ? await this.deps.freezeOverdue() : 0;
    if (frozen > 0) this.deps.logger.warn({ frozen }, 'dependent documents left waiting were frozen');
    const cancelled = this.deps.cancelReplaced ? await this.deps.cancelReplaced() : 0;
    if (cancelled > 0) this.deps.logger.warn({ cancelled }, 'replaced invoices left standing: cancellation requested');
    const settled = this.deps.settleDeadLetters ? await this.deps.settleDeadLetters() : 0;
    if (settled > 0) this.deps.logger.info({ settled }, 'dead letters re-driven elsewhere settled in stamp-dlq');
    return frozen + cancelled + settled + (await this.republishLost());
  }

  private async republishLost(): Promise<number> {
    const stale = await staleEnqueuedOutboxRows(this.deps.prisma, this.deps.staleMs, this.deps.batchSize);
    const lost: string[] = [];
    let finished = 0;
    for (const row of stale) {
      // Its own job (a retry, after a group's attempt, is one), else the group it was published in.
      const job =
        (await this.deps.queue.getJob(jobIdFor(row.stampKey, row.version))) ??
        (row.jobGroup ? await this.deps.queue.getJob(row.jobGroup) : undefined);
      if (!job) {
        lost.push(row.id);
        continue;
      }
      // A job that finished while its row is still enqueued is from another life of the row (a
      // database restored from a backup, a second database on the same Redis prefix) or kept by an
      // earlier version (which kept completed jobs for a day): BullMQ ignores an add with its id, so
      // the row would wait for ever. It is removed and the row published again.
      const state = await job.getState();
      if (state === 'completed' || state === 'failed') {
        await job.remove().catch(() => undefined);
        lost.push(row.id);
        finished++;
      }
    }
    if (finished > 0)
      this.deps.logger.warn({ finished }, 'outbox rows still enqueued whose job had finished: published again');
    if (lost.length === 0) return 0;
    // Only rows still enqueued: a worker may have finished one meanwhile.
    const count = await republishEnqueuedOutboxRows(this.deps.prisma, lost);
    this.deps.logger.warn({ count }, 'outbox rows whose job was lost put back to pending');
    return count;
  }
}

/** Runs the sweeper every `intervalMs` until stopped. */
export function runSweeper(sweeper: Pick<Sweeper, 'sweepOnce'>, options: { intervalMs: number; logger: Logger }) {
  const timer = setInterval(() => {
    sweeper.sweepOnce().catch((error: unknown) => options.logger.error({ err: error }, 'sweep failed'));
  }, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
