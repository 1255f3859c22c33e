import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Csd, OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { replacementsAwaitingCancellation, requestReplacedCancellation } from '@timbra/db/invoices';
import { parseStampJob, settleDeadLetters } from '@timbra/db/outbox';
import { bullmqErrorListener, type RedisConnection } from '@timbra/db/redis';
import { failureText } from './errors.ts';
import { freezeDependents, freezeOverdueDependents } from './invoices/freeze-dependents.ts';
import {
  backoffDelay,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type RetryPolicy,
  type StampJobData,
} from './stamping/jobs.ts';
import type { AttemptRecord, PacChain } from './stamping/pac-chain.ts';
import { createCancelProcessor, type CsdCredentials } from './invoices/cancel-processor.ts';
import { Relay } from './stamping/relay.ts';
import { createStampProcessor } from './stamping/stamp-processor.ts';
import { stampWrites } from './stamping/stamp-writes.ts';
import { Sweeper } from './stamping/sweeper.ts';
import { CorrectionRunner } from './invoices/corrections.ts';
import { createDeadLetterConsumer } from './stamping/dead-letters.ts';

export interface WorkerDeps {
  prisma: PrismaClient;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ workers require it). */
  redis: RedisConnection;
  /** BullMQ key prefix; for Redis Cluster use a `{hash-tag}` so a queue's keys share a slot. */
  prefix: string;
  chain: PacChain;
  retry: RetryPolicy;
  concurrency: number;
  relayBatchSize: number;
  /** Enqueued rows older than this whose job is gone are re-published. Default 5 minutes. */
  sweeperStaleMs?: number;
  /** BullMQ lock duration (ms): a job whose worker died is picked up again after it. Default 30 s. */
  lockMs?: number;
  logger: Logger;
  alert?: (letter: DeadLetterData) => Promise<void> | void;
  /** The emisor's CSD: freezes dependent documents (Egreso, Pago) once their invoice is stamped. */
  csd?: Csd;
  /** The operator's SAT catalogues, given to the SAT rules of every document this worker freezes. */
  catalogs?: OperatorCatalogs;
  /** Receives every job's PAC calls (metrics). */
  onAttempts?: (attempts: readonly AttemptRecord[]) => void;
  /** Told of each cancellation that reached its end (metrics). */
  onCancellation?: (outcome: 'cancelled' | 'rejected' | 'failed') => void;
  /** The CSD's files and password: cancellation requests are signed with them (absent: cancel jobs fail). */
  csdCredentials?: CsdCredentials;
  /** How often the SAT is asked while a cancellation is in process. Default 5 s doubling to 1 h. */
  cancelPoll?: { baseMs: number; maxMs: number };
  /** Corrections' proof: the in-flight grace and the retry delays (defaults: 2 min; 5 s doubling to 10 min). */
  corrections?: {
    inFlightGraceMs: number;
    retry: { baseMs: number; maxMs: number };
    /** Re-freeze late invoices on its own (AUTO_REFREEZE_LATE), this long before their Fecha leaves the window. */
    autoRefreezeLateMarginMs?: number;
  };
}

/** Builds the queues, the relay and the stamp worker (not started: `worker.run()` or autorun). */
export function createWorker(deps: WorkerDeps, options: { autorun?: boolean } = {}) {
  const connection = deps.redis;
  const queue = new Queue<StampJobData>(STAMP_QUEUE, { connection, prefix: deps.prefix });
  const dlq = new Queue<DeadLetterData>(STAMP_DLQ, { connection, prefix: deps.prefix });
  for (const q of [queue, dlq])
    q.on('error', bullmqErrorListener(deps.logger, 'queue error', 'warn', { queue: q.name }));
  const relay = new Relay({
    prisma: deps.prisma,
    queue,
    retry: deps.retry,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
  });
  const csd = deps.csd;
  const sweeper = createSweeper(deps, queue, dlq);
  const corrections = createCorrections(deps);
  const stamp = createStampProcessor({
    prisma: deps.prisma,
    writes: stampWrites(deps.prisma),
    chain: deps.chain,
    dlq,
    logger: deps.logger,
    alert: deps.alert ?? (() => undefined),
    ...(deps.onAttempts ? { onAttempts: deps.onAttempts } : {}),
    ...(csd
      ? { freezeDependents: (invoiceId: string) => freezeDependents(deps.prisma, csd, invoiceId, deps.catalogs) }
      : {}),
    cancelReplaced: (replacementId: string) => requestReplacedCancellation(deps.prisma, replacementId),
  });
  const cancel = deps.csdCredentials
    ? createCancelProcessor({
        prisma: deps.prisma,
        chain: deps.chain,
        csd: deps.csdCredentials,
        logger: deps.logger,
        poll: deps.cancelPoll ?? { baseMs: 5_000, maxMs: 3_600_000 },
        ...(deps.onCancellation ? { onOutcome: deps.onCancellation } : {}),
      })
    : undefined;
  const worker = new Worker<StampJobData>(STAMP_QUEUE, jobHandler(stamp, cancel), {
    connection,
    prefix: deps.prefix,
    concurrency: deps.concurrency,
    autorun: options.autorun ?? true,
    lockDuration: deps.lockMs ?? 30_000,
    stalledInterval: Math.max(500, Math.round((deps.lockMs ?? 30_000) / 2)),
    settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(deps.retry, attemptsMade) },
  });
  worker.on('error', bullmqErrorListener(deps.logger, 'worker error', 'error'));
  const deadLetters = createDeadLetterConsumer(
    { prisma: deps.prisma, redis: connection, prefix: deps.prefix, logger: deps.logger },
    { autorun: options.autorun ?? true },
  );
  return {
    queue,
    dlq,
    relay,
    sweeper,
    corrections,
    worker,
    /** The consumer of stamp-dlq (dead-letters.ts); runs with `worker`. */
    deadLetters,
    /** Stops taking jobs, lets in-flight ones finish, closes the queues. */
    close: async () => {
      await worker.close();
      await deadLetters.close();
      await queue.close();
      await dlq.close();
    },
  };
}

function assertNever(name: never): never {
  throw new UnrecoverableError(failureText('UNKNOWN_JOB', `no processor for ${String(name)}`));
}

/** The sweeper: enqueued rows Redis lost, overdue dependents, dead letters and replacements settled. */
function createSweeper(deps: WorkerDeps, queue: Queue<StampJobData>, dlq: Queue<DeadLetterData>): Sweeper {
  const csd = deps.csd;
  return new Sweeper({
    prisma: deps.prisma,
    queue,
    staleMs: deps.sweeperStaleMs ?? 5 * 60_000,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
    ...(csd ? { freezeOverdue: () => freezeOverdueDependents(deps.prisma, csd, deps.catalogs) } : {}),
    settleDeadLetters: () => settleDeadLetters(deps.prisma, dlq),
    cancelReplaced: async () => {
      let n = 0;
      for (const id of await replacementsAwaitingCancellation(deps.prisma, deps.relayBatchSize))
        if ((await requestReplacedCancellation(deps.prisma, id)).requested) n++;
      return n;
    },
  });
}

/** The corrections' runner (they freeze a new version: only with a CSD). */
function createCorrections(deps: WorkerDeps): CorrectionRunner | undefined {
  const csd = deps.csd;
  return csd
    ? new CorrectionRunner({
        prisma: deps.prisma,
        chain: deps.chain,
        csd,
        ...(deps.catalogs ? { catalogs: deps.catalogs } : {}),
        logger: deps.logger,
        inFlightGraceMs: deps.corrections?.inFlightGraceMs ?? 120_000,
        retry: deps.corrections?.retry ?? { baseMs: 5_000, maxMs: 600_000 },
        batchSize: deps.relayBatchSize,
        ...(deps.corrections?.autoRefreezeLateMarginMs !== undefined
          ? { autoRefreezeLateMarginMs: deps.corrections.autoRefreezeLateMarginMs }
          : {}),
      })
    : undefined;
}

/** What the worker does with a job of the stamp queue: stamp, or cancel (a job it cannot read fails now). */
function jobHandler(
  stamp: ReturnType<typeof createStampProcessor>,
  cancel: ReturnType<typeof createCancelProcessor> | undefined,
) {
  return async (job: Job<StampJobData>, token?: string) => {
    let parsed;
    try {
      parsed = parseStampJob(job.name, job.data);
    } catch (error) {
      // A job this worker cannot read fails now: retrying would not make it readable.
      throw new UnrecoverableError(failureText('UNKNOWN_JOB', (error as Error).message));
    }
    switch (parsed.name) {
      case 'stamp':
        return stamp(job);
      case 'cancel':
        if (!cancel) throw new UnrecoverableError(failureText('NO_CSD', 'cancellations cannot be signed'));
        return cancel(job, token);
      default:
        return assertNever(parsed.name);
    }
  };
}
