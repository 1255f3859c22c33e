import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { notifyOutbox, STAMP_QUEUE } from '@timbra/db/outbox';
import { createTestDatabase, outboxListenerPids, terminateBackend, type TestDatabase } from '@timbra/db/testing';
import type { StampJobData } from '../src/stamping/jobs.ts';
import { Relay, runRelay } from '../src/stamping/relay.ts';
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

describe('a relay round', () => {
  const relayOver = (queue: Queue<StampJobData>, batchSize: number) =>
    new Relay({
      prisma,
      queue,
      retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 200 },
      batchSize,
      logger: pino({ level: 'silent' }),
    });
  const privateQueue = () =>
    new Queue<StampJobData>(STAMP_QUEUE, { connection: redis, prefix: `{t${randomBytes(4).toString('hex')}}` });

  it('publishes what is pending in as few rounds as it takes: no empty round after a short batch', async () => {
    const queue = privateQueue();
    try {
      const relay = relayOver(queue, 10);
      const rounds = jest.spyOn(relay, 'drainOnce');
      const lone = await pendingInvoice(prisma, 'relay-round-lone');
      expect(await relay.drainAll()).toBe(1);
      expect(rounds).toHaveBeenCalledTimes(1);
      expect(await enqueued(lone.outboxId)).toBe(true);

      rounds.mockClear();
      const many = [];
      for (let i = 0; i < 25; i++) many.push(await pendingInvoice(prisma, `relay-round-${i}`));
      expect(await relay.drainAll()).toBe(25);
      // 10, 10, then 5: the short batch ends the drain.
      expect(rounds).toHaveBeenCalledTimes(3);
      for (const r of many) expect(await enqueued(r.outboxId)).toBe(true);
      // In the queue oldest first, as claimed.
      const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed'], 0, -1, true);
      expect(jobs.map((j) => j.data.outboxId)).toEqual([lone, ...many].map((r) => r.outboxId));
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('leaves its rows pending when the add fails: they are marked enqueued only by its commit', async () => {
    const queue = privateQueue();
    try {
      const row = await pendingInvoice(prisma, 'relay-round-add-fails');
      // The queue refusing the add (Redis down, say): injected at the one call the round makes.
      const failing = Object.assign(Object.create(queue) as Queue<StampJobData>, {
        addBulk: () => Promise.reject(new Error('Redis is down')),
      });
      await expect(relayOver(failing, 10).drainOnce()).rejects.toThrow('Redis is down');
      expect(await enqueued(row.outboxId)).toBe(false);
      // The next round publishes it.
      expect(await relayOver(queue, 10).drainAll()).toBeGreaterThanOrEqual(1);
      expect(await enqueued(row.outboxId)).toBe(true);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });
});
