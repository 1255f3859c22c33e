import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { createPrisma, notifyOutbox, STAMP_QUEUE, type PrismaClient } from '@timbra/db';
import { createTestDatabase, outboxListenerPids, terminateBackend, type TestDatabase } from '@timbra/db/testing';
import type { StampJobData } from '../src/jobs.ts';
import { Relay, runRelay } from '../src/relay.ts';
import { eventually, pendingInvoice, redisFor } from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
const redis = redisFor();

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
});
afterAll(async () => {
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

/** A committed outbox row announced the way the API announces it. */
async function announced(externalId: string) {
  const row = await pendingInvoice(prisma, externalId);
  await notifyOutbox(prisma, [row.outboxId]);
  return row;
}

const enqueued = async (outboxId: string) =>
  (await prisma.outboxRow.findUniqueOrThrow({ where: { id: outboxId } })).status === 'enqueued';

describe('the relay loop', () => {
  it('re-establishes its LISTEN connection when Postgres drops it, and wakes on NOTIFY again (not on the poll)', async () => {
    const queue = new Queue<StampJobData>(STAMP_QUEUE, {
      connection: redis,
      prefix: `{t${randomBytes(4).toString('hex')}}`,
    });
    const relay = new Relay({
      prisma,
      queue,
      retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 200 },
      batchSize: 50,
      logger: pino({ level: 'silent' }),
    });
    // A poll far longer than the test: only a NOTIFY can make the relay publish in time.
    const running = runRelay(relay, { databaseUrl: db.url, pollMs: 600_000, logger: pino({ level: 'silent' }) });
    try {
      const listening = () => outboxListenerPids(prisma);
      await eventually(async () => (await listening()).length === 1, 10_000);

      const first = await announced('relay-listen-1');
      await eventually(() => enqueued(first.outboxId), 5_000);

      // What a Postgres restart does to the listener: its backend goes away.
      const [before] = await listening();
      await terminateBackend(prisma, before!);
      await eventually(async () => {
        const now = await listening();
        return now.length === 1 && now[0] !== before;
      }, 10_000);

      const second = await announced('relay-listen-2');
      await eventually(() => enqueued(second.outboxId), 5_000);
      expect(await listening()).not.toContain(before);
    } finally {
      await running.stop();
      await queue.close();
    }
  });
});
