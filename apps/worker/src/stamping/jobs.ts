import type { JobsOptions, MinimalJob } from 'bullmq';

/**
 * The worker's job options and retry policy. The queues and the job registry (names, versions,
 * payload schemas) are shared with the API's dashboard and live in @timbra/db/outbox (queues.ts).
 */
export {
  JOBS,
  jobIdFor,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type StampGroupData,
  type StampJobData,
  type StampQueueData,
} from '@timbra/db/outbox';

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

/**
 * The job that carries on a row whose first attempt, in a group, failed: the row's own job id, the
 * attempts left, and the first backoff's delay (`attemptsBefore` keeps the later delays doubling).
 */
export function retryJobOptions(policy: RetryPolicy, jobId: string, random?: () => number): JobsOptions {
  return {
    ...stampJobOptions(policy, jobId),
    attempts: Math.max(1, policy.attempts - 1),
    delay: backoffDelay(policy, 1, random),
  };
}

/** Exponential backoff with jitter (attemptsMade starts at 1 for the first retry). */
export function backoffDelay(policy: RetryPolicy, attemptsMade: number, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attemptsMade - 1));
  return Math.round(exponential * (0.5 + random()));
}

/**
 * The stamp worker's backoff strategy (`backoff: { type: 'timbra' }`): `backoffDelay` over every
 * attempt the row had, so a retry job that carries on from a group's attempt (`attemptsBefore`)
 * keeps doubling where the row left off.
 */
export function stampBackoff(policy: RetryPolicy, random?: () => number) {
  return (attemptsMade: number, _type?: string, _error?: Error, job?: MinimalJob): number =>
    backoffDelay(policy, attemptsMade + attemptsBeforeOf(job), random);
}

function attemptsBeforeOf(job: MinimalJob | undefined): number {
  const before = (job?.data as { attemptsBefore?: unknown } | undefined)?.attemptsBefore;
  return typeof before === 'number' && Number.isInteger(before) && before > 0 ? before : 0;
}
