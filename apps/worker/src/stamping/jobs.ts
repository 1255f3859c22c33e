import type { JobsOptions } from 'bullmq';

/**
 * The worker's job options and retry policy. The queues and the job registry (names, versions,
 * payload schemas) are shared with the API's dashboard and live in @timbra/db/outbox (queues.ts).
 */
export { JOBS, jobIdFor, STAMP_DLQ, STAMP_QUEUE, type DeadLetterData, type StampJobData } from '@timbra/db/outbox';

/** The defaults (config.ts): 20 attempts, 2 s doubling to at most 15 min, so a job is stamped or dead-lettered
 * within about 3 hours — well inside the 72-hour window after which a PAC refuses the Fecha. */
export interface RetryPolicy {
  /** Attempts before a job is dead-lettered. */
  attempts: number;
  /** First retry delay; doubles per attempt, with ±50% jitter. */
  baseDelayMs: number;
  /** Cap of one delay. */
  maxDelayMs: number;
}

export function stampJobOptions(policy: RetryPolicy, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: policy.attempts,
    backoff: { type: 'timbra' },
    // Postgres holds the outcome (the invoice, the outbox row, the PAC ledger): a completed job kept in
    // Redis was three writes and a trim a payment for no reader (issue #49). A job added again after
    // its row is done is skipped by the stamper without a PAC call (stamp-processor.ts).
    removeOnComplete: true,
    // Postgres keeps the failure and the DLQ queue shows it; removing the job lets a re-drive add it again.
    removeOnFail: true,
  };
}

/** Exponential backoff with jitter (attemptsMade starts at 1 for the first retry). */
export function backoffDelay(policy: RetryPolicy, attemptsMade: number, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.round(exponential * (0.5 + random()));
}
