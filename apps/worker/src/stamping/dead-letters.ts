import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import { deadLetterState, JOBS, STAMP_DLQ, type DeadLetterData } from '@timbra/db/outbox';
import { bullmqErrorListener, type RedisConnection } from '@timbra/db/redis';
import { failureText } from '../errors.ts';

/**
 * The consumer of `stamp-dlq`, the dashboard's view of the dead letters (Postgres is the record: see
 * @timbra/db dead-letters.ts). A letter still dead is failed with its reason — it stays in the
 * queue's failed set, red, with the PAC's words; a letter whose row was re-driven or moved on
 * (settled by `settleDeadLetters` after a re-drive, or by the sweeper) is completed with who
 * re-drove it and what the row is now. Being a real consumer, it is also why the dashboard shows
 * a worker on the queue: none means this process is not running.
 */
export function createDeadLetterConsumer(
  deps: {
    /** The client of the letter's organization (`org`; absent: the home organization's). */
    prismaFor: (organization: string | undefined) => Promise<PrismaClient>;
    redis: RedisConnection;
    prefix: string;
    logger: Logger;
  },
  options: { autorun: boolean },
): Worker<DeadLetterData> {
  const consumer = new Worker<DeadLetterData>(
    STAMP_DLQ,
    async (job: Job<DeadLetterData>) => {
      const parsed = JOBS.deadLetter.data.safeParse(job.data);
      if (!parsed.success) throw new UnrecoverableError(failureText('UNKNOWN_JOB', 'not a dead letter Timbra reads'));
      const letter = parsed.data;
      const state = await deadLetterState(await deps.prismaFor(letter.org), letter);
      // Letters of rows published before serie-folio travelled with the job: named now.
      if (!letter.serieFolio) await job.updateData({ ...job.data, serieFolio: state.serieFolio });
      if (state.dead) throw new UnrecoverableError(failureText(letter.code, letter.reason));
      deps.logger.info({ outboxId: letter.outboxId, ...state }, 'dead letter settled');
      return state;
    },
    { connection: deps.redis, prefix: deps.prefix, concurrency: 1, autorun: options.autorun },
  );
  consumer.on('error', bullmqErrorListener(deps.logger, 'dead-letter consumer error', 'error'));
  return consumer;
}
