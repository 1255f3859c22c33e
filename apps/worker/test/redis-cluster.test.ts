import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { connectRedis, redisConfigProblems, redisTarget, type RedisConnection } from '@timbra/db/redis';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { startRedisCluster, type RedisClusterProcess } from '@timbra/test-support';
import {
  eventually,
  pendingInvoice,
  startSandboxProcess,
  startWorkerProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

// A local Redis Cluster of three masters (redis-server --cluster-enabled): the queue, its relay, the
// stamping path and the recovery from a Redis that lost everything work on it unchanged, with the
// queue prefix's hash tag keeping each queue's keys in one slot.
let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let cluster: RedisClusterProcess;
let redis: RedisConnection;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  [sandbox, cluster] = await Promise.all([startSandboxProcess(), startRedisCluster(3)]);
  redis = connectRedis(redisTarget(cluster.url, true), { maxRetriesPerRequest: null });
  await eventually(async () => (await redis.ping().catch(() => '')) === 'PONG', 10_000);
}, 60_000);
afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
  await sandbox?.stop();
  await prisma.$disconnect();
  await db.drop();
});

type Pending = Awaited<ReturnType<typeof pendingInvoice>>;

interface Ledger {
  stamps: { customid?: string }[];
}
const stampsOf = async (stampKey: string) =>
  ((await sandbox.admin('ledger', undefined)) as Ledger).stamps.filter((s) => s.customid === stampKey).length;
const stampedCount = async (ids: string[]) => prisma.invoice.count({ where: { id: { in: ids }, status: 'stamped' } });

/** The worker's parts on the cluster, run by hand (`autorun: false`); the sweeper re-publishes at once. */
const clusterWorker = (prefix: string) =>
  testWorker({ prisma, redis, sandbox }, { prefix, sweeperStaleMs: 0, relayBatchSize: 100 }, { autorun: false });

describe('on a Redis Cluster', () => {
  it('is a cluster of three masters, and the queue keys of one prefix live in one slot', async () => {
    expect(redis).toBeInstanceOf(Cluster);
    expect((redis as Cluster).nodes('master')).toHaveLength(3);
    const w = clusterWorker('{slot}');
    try {
      await w.queue.add('probe', { v: 1 } as never, { jobId: 'probe' });
      const slots = new Set<number>();
      for (const node of (redis as Cluster).nodes('master'))
        for (const key of await node.keys('{slot}:*')) slots.add(Number(await node.cluster('KEYSLOT', key)));
      expect(slots.size).toBe(1);
      // Without the hash tag a queue's keys fall in different slots: BullMQ's scripts are refused.
      const untagged = new Queue('probe', { connection: redis, prefix: 'untagged' });
      await expect(untagged.add('probe', {})).rejects.toThrow(/CROSSSLOT/);
      await untagged.close();
    } finally {
      await w.queue.obliterate({ force: true });
      await w.close();
    }
  });

  // Two workers one after the other, not one paused and resumed: on a Redis Cluster BullMQ's
  // Worker.pause() waits for its blocking connection to end and, now and then, waits for ever
  // (a probe: it hung in each of four runs, by the seventh pause/resume cycle, on this cluster; in none
  // of 400 cycles on one Redis; bullmq issue #4065). Timbra's worker never pauses; it closes, and 30
  // closes on the cluster did not hang.
  it('stamps through the relay and the worker, and after every master is flushed the sweeper re-publishes: each stamped once', async () => {
    const before = clusterWorker('{cluster}');
    const first: Pending[] = [];
    try {
      for (let i = 0; i < 10; i++) first.push(await pendingInvoice(prisma, `cluster-${i}`));
      expect(await before.relay.drainAll()).toBe(10);
      void before.worker.run();
      await eventually(async () => (await stampedCount(first.map((r) => r.invoiceId))) === 10, 30_000);
    } finally {
      await before.close();
    }

    const after = clusterWorker('{cluster}');
    try {
      const lost: Pending[] = [];
      for (let i = 0; i < 10; i++) lost.push(await pendingInvoice(prisma, `cluster-lost-${i}`));
      expect(await after.relay.drainAll()).toBe(10);
      // Redis loses everything (each master restarted empty, say): FLUSHALL reaches one node only.
      await Promise.all((redis as Cluster).nodes('master').map((node) => node.flushall()));
      expect(await after.queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
      expect(await after.sweeper.sweepOnce()).toBe(10);
      expect(await after.relay.drainAll()).toBe(10);
      void after.worker.run();
      await eventually(async () => (await stampedCount(lost.map((r) => r.invoiceId))) === 10, 30_000);
      expect(await after.sweeper.sweepOnce()).toBe(0);
      for (const r of [...first, ...lost]) expect(await stampsOf(r.stampKey)).toBe(1);
    } finally {
      await after.close();
    }
  });

  it('the worker process runs on it from its settings (REDIS_CLUSTER=true, seed nodes in REDIS_URL)', async () => {
    const worker = startWorkerProcess({ databaseUrl: db.url, sandbox }, '{cluster-process}', {
      REDIS_URL: cluster.url,
      REDIS_CLUSTER: 'true',
    });
    try {
      const row = await pendingInvoice(prisma, 'cluster-process');
      await eventually(async () => (await stampedCount([row.invoiceId])) === 1, 30_000);
      expect(await stampsOf(row.stampKey)).toBe(1);
    } finally {
      worker.kill('SIGTERM');
      await new Promise((r) => (worker.exitCode === null ? worker.once('exit', r) : r(undefined)));
    }
  });

  it('settings: several nodes need REDIS_CLUSTER=true, and a prefix without a hash tag is refused on a cluster', () => {
    expect(redisConfigProblems(cluster.url, false, '{timbra}')).toEqual([
      'REDIS_URL lists several nodes: set REDIS_CLUSTER=true for a Redis Cluster',
    ]);
    expect(redisConfigProblems(cluster.url, true, 'timbra')).toEqual([
      expect.stringMatching(/^QUEUE_PREFIX "timbra" has no hash tag/),
    ]);
    expect(redisConfigProblems(cluster.url, true, '{timbra}')).toEqual([]);
    expect(redisConfigProblems('redis://:s3cret@127.0.0.1:1,http://x', true, '{timbra}')).toEqual([
      'REDIS_URL: each cluster node is a redis:// or rediss:// URL',
    ]);
    expect(redisTarget('redis://user:s3cret@127.0.0.1:7000,redis://127.0.0.1:7001', true)).toMatchObject({
      kind: 'cluster',
      nodes: [
        { host: '127.0.0.1', port: 7000 },
        { host: '127.0.0.1', port: 7001 },
      ],
      options: { username: 'user', password: 's3cret' },
    });
  });
});
