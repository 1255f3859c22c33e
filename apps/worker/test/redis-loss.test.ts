/** @clock the sweeper's staleness is enqueued_at against the database's now() */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { insertInvoices } from '@timbra/db/invoices';
import { privateRedisArgs, realClockEnv } from '@timbra/test-support';
import { createTestDatabase, databaseNow, type TestDatabase } from '@timbra/db/testing';
import { createWorker } from '../src/create-worker.ts';
import { JOBS, jobIdFor } from '../src/stamping/jobs.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import {
  eventually,
  freePort,
  pendingInvoice,
  startSandboxProcess,
  swClients,
  type SandboxProcess,
} from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let redisServer: ChildProcess;
let redis: Redis;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  // A private Redis: this test flushes it.
  const port = await freePort();
  redisServer = spawn('redis-server', privateRedisArgs(port), { stdio: 'ignore', env: realClockEnv() });
  redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null, retryStrategy: () => 50 });
  await eventually(async () => (await redis.ping().catch(() => '')) === 'PONG', 10_000);
});
afterAll(async () => {
  await redis.quit();
  redisServer.kill('SIGTERM');
  await sandbox.stop();
  await prisma.$disconnect();
  await db.drop();
});

/** A worker of these tests on `prefix`, started by hand (`autorun: false`); its sweeper takes any enqueued row. */
function workerOn(
  prefix: string,
  options: Pick<Parameters<typeof createWorker>[0], 'concurrency' | 'relayBatchSize'> & { logger?: Logger },
) {
  return createWorker(
    {
      prisma,
      redis,
      prefix,
      chain: new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 60_000 }),
      retry: { attempts: 5, baseDelayMs: 50, maxDelayMs: 200 },
      sweeperStaleMs: 0,
      logger: pino({ level: 'silent' }),
      ...options,
    },
    { autorun: false },
  );
}

describe('Redis is not the source of truth', () => {
  it('after FLUSHALL, the sweeper re-publishes every enqueued row and each is stamped exactly once', async () => {
    const w = workerOn('{flush}', { concurrency: 4, relayBatchSize: 100 });
    try {
      const rows: Awaited<ReturnType<typeof pendingInvoice>>[] = [];
      for (let i = 0; i < 10; i++) rows.push(await pendingInvoice(prisma, `flush-${i}`));
      expect(await w.relay.drainAll()).toBe(10);
      await redis.flushall();
      expect(await w.queue.getJobCounts('waiting')).toEqual({ waiting: 0 });
      expect(await w.sweeper.sweepOnce()).toBe(10);
      expect(await w.relay.drainAll()).toBe(10);
      void w.worker.run();
      await eventually(
        async () =>
          (await prisma.invoice.count({ where: { id: { in: rows.map((r) => r.invoiceId) }, status: 'stamped' } })) ===
          10,
        30_000,
      );
      // A second sweep finds nothing lost: every row is done.
      expect(await w.sweeper.sweepOnce()).toBe(0);
      const ledger = (await sandbox.admin('ledger', undefined)) as { stamps: { customid?: string }[] };
      for (const r of rows) expect(ledger.stamps.filter((s) => s.customid === r.stampKey)).toHaveLength(1);
    } finally {
      await w.close();
    }
  });

  it('a job in flight when Redis loses it is stamped once, and its loss is a warning, not an error', async () => {
    // The PAC answers slowly, so the job is still being worked on when Redis empties.
    await sandbox.admin('faults', { instance: 'primary', latencyMs: 700 });
    const lines: { level: number; msg: string }[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (line: string) => lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const w = workerOn('{lost}', { concurrency: 1, relayBatchSize: 100, logger });
    try {
      const row = await pendingInvoice(prisma, 'lost-in-flight');
      expect(await w.relay.drainAll()).toBe(1);
      void w.worker.run();
      await eventually(async () => (await w.queue.getJobCounts('active')).active === 1, 10_000);
      await redis.flushall();
      // The attempt in flight ends (stamped, or failed and to be retried) and finds its job gone.
      await eventually(() => Promise.resolve(lines.some((l) => /no longer this worker's/.test(l.msg))), 20_000);
      // (One line per BullMQ call that finds it gone: moving it to finished, or to be retried.)
      expect(new Set(lines.filter((l) => /no longer this worker's/.test(l.msg)).map((l) => l.level))).toEqual(
        new Set([40]),
      );
      // Stamped then, or (its retry went with the job) published again by the sweeper, as its
      // schedule does in a running worker.
      await eventually(async () => {
        if ((await prisma.invoice.findUniqueOrThrow({ where: { id: row.invoiceId } })).status === 'stamped')
          return true;
        if ((await w.sweeper.sweepOnce()) > 0) await w.relay.drainAll();
        return false;
      }, 20_000);
      expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
      // Nothing left to publish again: the row is done.
      expect(await w.sweeper.sweepOnce()).toBe(0);
      const ledger = (await sandbox.admin('ledger', undefined)) as { stamps: { customid?: string }[] };
      expect(ledger.stamps.filter((s) => s.customid === row.stampKey)).toHaveLength(1);
    } finally {
      await w.close();
      await sandbox.admin('faults', { instance: 'primary', reset: true });
    }
  });
});

describe('a job that finished in another life of its row', () => {
  it('is removed and the row published again (a restored database, a second database on the same prefix)', async () => {
    const w = workerOn('{restored}', { concurrency: 2, relayBatchSize: 10 });
    try {
      const row = await pendingInvoice(prisma, `restored-${Date.now()}`);
      expect(await w.relay.drainAll()).toBe(1);
      void w.worker.run();
      const doneRow = async () => prisma.outboxRow.findFirstOrThrow({ where: { stampKey: row.stampKey } });
      await eventually(async () => (await doneRow()).status === 'done', 30_000);
      // A completed job is not kept: Postgres holds the outcome.
      const jobId = jobIdFor(row.stampKey, 1);
      await eventually(async () => (await w.queue.getJob(jobId)) === undefined);
      // A job kept by an earlier version (it kept completed jobs for a day), added again here: the
      // stamper skips a row already done, and the job stays completed.
      const { id: outboxId } = await doneRow();
      await w.queue.add(
        JOBS.stamp.name,
        { v: JOBS.stamp.version, outboxId, stampKey: row.stampKey },
        { jobId, removeOnComplete: false },
      );
      await eventually(async () => (await w.queue.getJob(jobId))?.finishedOn !== undefined);
      expect(await (await w.queue.getJob(jobId))!.getState()).toBe('completed');
      await w.worker.pause();
      // The database goes back in time (a restore): the row is enqueued again, its job long finished.
      await prisma.outboxRow.updateMany({
        where: { stampKey: row.stampKey },
        data: { status: 'enqueued', enqueuedAt: new Date((await databaseNow(prisma)) - 60_000) },
      });
      expect(await w.sweeper.sweepOnce()).toBe(1);
      expect(await w.queue.getJob(jobId)).toBeUndefined();
      expect((await doneRow()).status).toBe('pending');
      // A row enqueued whose job waits is left alone.
      expect(await w.relay.drainAll()).toBe(1);
      expect(await w.sweeper.sweepOnce()).toBe(0);
      // With no job at all (removed on completion), the row is published again too.
      await prisma.outboxRow.updateMany({
        where: { stampKey: row.stampKey },
        data: { status: 'enqueued', enqueuedAt: new Date((await databaseNow(prisma)) - 60_000) },
      });
      await w.queue.remove(jobId);
      expect(await w.sweeper.sweepOnce()).toBe(1);
      expect((await doneRow()).status).toBe('pending');
    } finally {
      await w.close();
    }
  });
});

describe('readiness reflects consumption', () => {
  it('is ready while consuming, not ready when jobs wait and the worker stopped taking them', async () => {
    const { createHealth } = await import('../src/operations/health.ts');
    const w = createWorker(
      {
        prisma,
        redis,
        prefix: '{ready}',
        chain: new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 60_000 }),
        retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 100 },
        concurrency: 2,
        relayBatchSize: 10,
        logger: pino({ level: 'silent' }),
      },
      { autorun: false },
    );
    try {
      const health = createHealth({ prisma, redis, queue: w.queue, worker: w.worker, stallMs: 200 });
      void w.worker.run();
      await eventually(() => Promise.resolve(w.worker.isRunning()));
      expect(await health.readiness()).toEqual({ ok: true, checks: { postgres: 'ok', redis: 'ok', consumer: 'ok' } });
      await w.worker.pause(true);
      await pendingInvoice(prisma, 'ready');
      await w.relay.drainAll();
      expect((await health.readiness()).checks.consumer).toBe('stopped');
    } finally {
      await w.close();
    }
  });
});

describe('worker metrics', () => {
  it('exposes attempts by PAC and outcome, the backlog and the dead letters from Postgres, and circuit state', async () => {
    const { createWorkerMetrics } = await import('../src/operations/metrics.ts');
    const chain = new PacChain(swClients(sandbox), { threshold: 1, coolDownMs: 60_000 });
    const metrics = createWorkerMetrics({ prisma, chain });
    await pendingInvoice(prisma, 'metrics');
    const before = await metrics.registry.getSingleMetricAsString('timbra_invoices_needs_data');
    const { id: org } = await prisma.emisor.findFirstOrThrow();
    const needing = Number(new RegExp(`timbra_invoices_needs_data\\{organization="${org}"\\} (\\d+)`).exec(before)![1]);
    await insertInvoices(prisma, org, [
      {
        kind: 'I',
        serie: 'ND',
        folio: 1,
        paymentId: null,
        stampKey: `needs-data-${Date.now()}`,
        moneda: 'MXN',
        status: 'needs_data',
        frozen: undefined,
        totals: { subTotal: '100.00', total: '116.00' },
        problems: [{ path: 'receptor.usoCFDI', message: 'CFDI40161: …' }],
      },
    ]);
    chain.breakers.get('backup')!.failedNotProcessed();
    metrics.record([
      { pac: 'primary', outcome: 'transient', durationMs: 3 },
      { pac: 'backup', outcome: 'stamped', durationMs: 40 },
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/timbra_stamp_attempts_total\{pac="backup",outcome="stamped"\} 1/);
    expect(text).toMatch(/timbra_failovers_total 1/);
    // A series an organization (the one here).
    const of = `{organization="${org}"}`;
    expect(text).toMatch(new RegExp(`timbra_outbox_rows\\{organization="${org}",status="pending"\\} [1-9]`));
    expect(text).toContain(`timbra_outbox_oldest_pending_age_seconds${of} `);
    expect(text).toMatch(new RegExp(`timbra_dead_letters\\{organization="${org}"\\} \\d+`));
    expect(text).toContain(`timbra_invoices_needs_data${of} ${needing + 1}`);
    expect(text).toMatch(new RegExp(`timbra_invoices_needs_data_oldest_age_seconds\\{organization="${org}"\\} \\d`));
    expect(text).toMatch(/timbra_circuit_state\{pac="backup",state="open"\} 1/);
    expect(text).toMatch(/timbra_circuit_state\{pac="backup",state="closed"\} 0/);
    expect(text).toMatch(/timbra_circuit_state\{pac="backup",state="half_open"\} 0/);
    expect(text).not.toMatch(/^timbra_circuit_\w+\{[^}]*\} 0\.5$/m);
  });
});
