import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import { JOBS, jobIdFor, type StampGroupData, type StampQueueData } from '@timbra/db/outbox';
import type { FairSlots } from './fair-slots.ts';
import { retryJobOptions, type RetryPolicy } from './jobs.ts';
import { stampRow, type StampProcessorDeps } from './stamp-processor.ts';

export interface StampGroupDeps extends StampProcessorDeps {
  /** Where a row that failed for now goes on, as a `stamp` job of its own. */
  queue: Queue<StampQueueData>;
  retry: RetryPolicy;
  /** The process's PAC calls in flight, shared among organizations. */
  slots: FairSlots;
}

/** What a group job did with its rows (its return value, shown on the dashboard). */
export interface GroupOutcome {
  stamped: number;
  /** Nothing to do: done, failed or held already, or gone. */
  skipped: number;
  deadLettered: number;
  /** Failed for now: carried on by a `stamp` job of its own, after the first backoff. */
  retried: number;
}

/**
 * A `stamp-group` job: one relay claim's stamp rows, each stamped as a `stamp` job's row is
 * (`stampRow`, the same frozen bytes and write-ahead records), all at once within the process's
 * slots. It is each row's first attempt: a row that fails for now goes on as its own `stamp` job
 * (its job id, the attempts left, the first backoff's delay), added before this job completes, so
 * its retries, dead letter and re-drive are those of any row. If the worker dies midway, BullMQ runs
 * the group again: rows done meanwhile are skipped, a row whose call was in flight stays with that
 * PAC, and a retry job already added is not added twice (same id).
 * @throws when the retries cannot be added (Redis unreachable): the group is retried as a whole.
 */
export function createStampGroupProcessor(deps: StampGroupDeps) {
  return async (
    job: Job<StampQueueData>,
    data: { rows: NonNullable<StampGroupData['rows']>; org?: string | undefined },
  ) => {
    const last = deps.retry.attempts <= 1;
    const outcomes = await Promise.allSettled(
      data.rows.map((r) =>
        deps.slots.run(data.org ?? '', () =>
          stampRow(deps, { jobId: job.id, outboxId: r.outboxId, serieFolio: r.serieFolio, attempt: 1, last }),
        ),
      ),
    );
    const outcome: GroupOutcome = { stamped: 0, skipped: 0, deadLettered: 0, retried: 0 };
    const retries = [];
    for (const [i, settled] of outcomes.entries()) {
      const r = data.rows[i]!;
      if (settled.status === 'fulfilled') {
        if ('skipped' in settled.value) outcome.skipped++;
        else outcome.stamped++;
      } else if (settled.reason instanceof UnrecoverableError) outcome.deadLettered++;
      else
        retries.push({
          name: JOBS.stamp.name,
          data: {
            v: JOBS.stamp.version,
            outboxId: r.outboxId,
            stampKey: r.stampKey,
            ...(r.serieFolio ? { serieFolio: r.serieFolio } : {}),
            ...(data.org ? { org: data.org } : {}),
            attemptsBefore: 1,
          },
          opts: retryJobOptions(deps.retry, jobIdFor(r.stampKey, r.version)),
        });
    }
    if (retries.length > 0) await deps.queue.addBulk(retries);
    outcome.retried = retries.length;
    return outcome;
  };
}
