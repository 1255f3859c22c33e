import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Csd } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { freezeDependents, freezeOverdueDependents } from './freeze-dependents.ts';
import {
  backoffDelay,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type RetryPolicy,
  type StampJobData,
} from './jobs.ts';
import type { AttemptRecord, PacChain } from './pac-chain.ts';
import { Relay } from './relay.ts';
import { createStampProcessor } from './stamp-processor.ts';
import { Sweeper } from './sweeper.ts';

export interface WorkerDeps {
  prisma: PrismaClient;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ workers require it). */
  redis: Redis;
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
  /** Receives every job's PAC calls (metrics). */
  onAttempts?: (attempts: readonly AttemptRecord[]) => void;
}

/** Builds the queues, the relay and the stamp worker (not started: `worker.run()` or autorun). */
export function createWorker(deps: WorkerDeps, options: { autorun?: boolean } = {}) {
  const connection = deps.redis;
  const queue = new Queue<StampJobData>(STAMP_QUEUE, { connection, prefix: deps.prefix });
  const dlq = new Queue<DeadLetterData>(STAMP_DLQ, { connection, prefix: deps.prefix });
  const relay = new Relay({
    prisma: deps.prisma,
    queue,
    retry: deps.retry,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
  });
  const csd = deps.csd;
  const sweeper = new Sweeper({
    prisma: deps.prisma,
    queue,
    staleMs: deps.sweeperStaleMs ?? 5 * 60_000,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
    ...(csd ? { freezeOverdue: () => freezeOverdueDependents(deps.prisma, csd) } : {}),
  });
  const worker = new Worker<StampJobData>(
    STAMP_QUEUE,
    createStampProcessor({
      prisma: deps.prisma,
      chain: deps.chain,
      dlq,
      logger: deps.logger,
      alert: deps.alert ?? (() => undefined),
      ...(deps.onAttempts ? { onAttempts: deps.onAttempts } : {}),
      ...(csd ? { freezeDependents: (invoiceId: string) => freezeDependents(deps.prisma, csd, invoiceId) } : {}),
    }),
    {
      connection,
      prefix: deps.prefix,
      concurrency: deps.concurrency,
      autorun: options.autorun ?? true,
      lockDuration: deps.lockMs ?? 30_000,
      stalledInterval: Math.max(500, Math.round((deps.lockMs ?? 30_000) / 2)),
      settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(deps.retry, attemptsMade) },
    },
  );
  worker.on('error', (error) => deps.logger.error({ err: error }, 'worker error'));
  return {
    queue,
    dlq,
    relay,
    sweeper,
    worker,
    /** Stops taking jobs, lets in-flight ones finish, closes the queues. */
    close: async () => {
      await worker.close();
      await queue.close();
      await dlq.close();
    },
  };
}
