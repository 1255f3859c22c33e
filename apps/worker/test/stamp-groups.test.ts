/**
 * `stamp-group` jobs (STAMP_JOB_GROUPS): a relay claim's stamp rows in one job, against the sandbox
 * PAC, real Postgres and Redis. Each row is stamped once; a row that fails goes on as a job of its
 * own; the sweeper tells a row waiting in its group from a row whose job Redis lost.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import pino from 'pino';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { freezeSample } from '@timbra/test-support';
import type { DeadLetterData, StampGroupData, StampJobData } from '../src/stamping/jobs.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import type { GroupOutcome } from '../src/stamping/stamp-group.ts';
import {
  eventually,
  pendingInvoice,
  redisFor,
  startSandboxProcess,
  swClients,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
const redis = redisFor();
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  // Each instance's first stamp is its slowest (a cold process): made here, with time to spare.
  for (const client of swClients(sandbox, { connectMs: 10_000, responseMs: 30_000 }))
    await client.stamp(freezeSample({ sourceId: `warm-up-${randomUUID()}` }).xml, { idempotencyKey: randomUUID() });
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  for (const instance of ['primary', 'backup']) await sandbox.admin('faults', { instance, reset: true });
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

/** A worker with groups on, on a queue of its own, started by the test (`run`). */
function worker(
  options: { attempts?: number; baseDelayMs?: number; letters?: DeadLetterData[]; sweeperStaleMs?: number } = {},
) {
  const baseDelayMs = options.baseDelayMs ?? 50;
  const w = testWorker(
    { prisma, redis, sandbox },
    {
      stampGroups: true,
      // A circuit that opens on the faults below closes again soon after they end.
      chain: new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 100 }),
      retry: { attempts: options.attempts ?? 6, baseDelayMs, maxDelayMs: baseDelayMs * 4 },
      alert: (letter) => void options.letters?.push(letter),
      logger: pino({ level: 'silent' }),
      ...(options.sweeperStaleMs !== undefined ? { sweeperStaleMs: options.sweeperStaleMs } : {}),
    },
    { autorun: false },
  );
  closers.push(w.close);
  // What each group job returned (completed jobs are removed from Redis).
  const outcomes: GroupOutcome[] = [];
  w.worker.on('completed', (job: Job, result: unknown) => {
    if (job.name === 'stamp-group') outcomes.push(result as GroupOutcome);
  });
  return { ...w, outcomes, run: () => void w.worker.run() };
}

async function pendingInvoices(tag: string, n: number) {
  const rows = [];
  for (let i = 0; i < n; i++) rows.push(await pendingInvoice(prisma, `${tag}-${i}`));
  return rows;
}

const invoicesOf = (rows: { invoiceId: string }[]) =>
  prisma.invoice.findMany({ where: { id: { in: rows.map((r) => r.invoiceId) } }, include: { outbox: true } });
const allStamped = async (rows: { invoiceId: string }[]) =>
  (await invoicesOf(rows)).every((i) => i.status === 'stamped');

/** The sandbox's stamps of these rows' keys: exactly once each is what the test expects. */
async function stampsOf(rows: { stampKey: string }[]) {
  const ledger = (await sandbox.admin('ledger', undefined)) as { stamps: { customid?: string }[] };
  const keys = new Set(rows.map((r) => r.stampKey));
  return ledger.stamps
    .filter((s) => s.customid !== undefined && keys.has(s.customid))
    .map((s) => s.customid)
    .sort();
}

describe('stamp-group jobs', () => {
  it("publishes a claim's stamp rows as one job naming them, then stamps each row once", async () => {
    const w = worker();
    const rows = await pendingInvoices('group', 4);
    expect(await w.relay.drainAll()).toBe(4);
    const jobs = (await w.queue.getJobs(['waiting'])) as Job<StampGroupData>[];
    expect(jobs.map((j) => j.name)).toEqual(['stamp-group']);
    const [group] = jobs;
    expect(group!.data.rows).toEqual(
      rows.map((r) => ({
        outboxId: r.outboxId,
        stampKey: r.stampKey,
        version: 1,
        serieFolio: expect.stringMatching(/^W-\d+$/),
      })),
    );
    // The rows name their job: what the sweeper looks for.
    const outbox = await prisma.outboxRow.findMany({ where: { id: { in: rows.map((r) => r.outboxId) } } });
    expect(outbox.map((o) => [o.status, o.jobGroup])).toEqual(rows.map(() => ['enqueued', group!.id]));

    w.run();
    await eventually(() => allStamped(rows), 15_000);
    await eventually(() => Promise.resolve(w.outcomes.length === 1));
    expect(w.outcomes).toEqual([{ stamped: 4, skipped: 0, deadLettered: 0, retried: 0 }]);
    expect(await stampsOf(rows)).toEqual(rows.map((r) => r.stampKey).sort());
    expect((await invoicesOf(rows)).every((i) => i.outbox[0]!.status === 'done')).toBe(true);
  });

  it('runs a group again (a stalled worker) without a second stamp: its rows are skipped', async () => {
    const w = worker();
    const rows = await pendingInvoices('again', 3);
    await w.relay.drainAll();
    const [group] = (await w.queue.getJobs(['waiting'])) as Job<StampGroupData>[];
    w.run();
    await eventually(() => allStamped(rows), 15_000);
    // What BullMQ does with a group whose worker died: the same rows run again.
    await w.queue.add('stamp-group', group!.data, { jobId: `${group!.id}-again` });
    await eventually(() => Promise.resolve(w.outcomes.length === 2));
    expect(w.outcomes[1]).toEqual({ stamped: 0, skipped: 3, deadLettered: 0, retried: 0 });
    expect(await stampsOf(rows)).toEqual(rows.map((r) => r.stampKey).sort());
  });

  it('a row that fails in its group goes on as its own job (its id, the attempts left, the backoff), then is stamped once', async () => {
    for (const instance of ['primary', 'backup']) await sandbox.admin('faults', { instance, errorRate: 1 });
    // The first backoff is 1–3 s: the jobs are still waiting their turn when the test looks.
    const w = worker({ attempts: 6, baseDelayMs: 2_000 });
    const rows = await pendingInvoices('retry', 3);
    await w.relay.drainAll();
    w.run();
    await eventually(() => Promise.resolve(w.outcomes.length === 1), 15_000);
    expect(w.outcomes).toEqual([{ stamped: 0, skipped: 0, deadLettered: 0, retried: 3 }]);
    for (const r of rows) {
      const job = (await w.queue.getJob(r.stampKey)) as Job<StampJobData> | undefined;
      expect(job?.name).toBe('stamp');
      expect(job?.data).toEqual(
        expect.objectContaining({ outboxId: r.outboxId, stampKey: r.stampKey, attemptsBefore: 1 }),
      );
      expect(job?.opts.attempts).toBe(5);
      expect(await job?.getState()).toBe('delayed');
    }
    // The group's attempt is on record for each row.
    expect((await invoicesOf(rows)).every((i) => i.outbox[0]!.attempts >= 1)).toBe(true);

    for (const instance of ['primary', 'backup']) await sandbox.admin('faults', { instance, reset: true });
    await eventually(() => allStamped(rows), 20_000);
    expect(await stampsOf(rows)).toEqual(rows.map((r) => r.stampKey).sort());
  });

  it('with a single attempt allowed, a row that fails in its group is dead-lettered there', async () => {
    for (const instance of ['primary', 'backup']) await sandbox.admin('faults', { instance, errorRate: 1 });
    const letters: DeadLetterData[] = [];
    const w = worker({ attempts: 1, letters });
    const rows = await pendingInvoices('dead', 2);
    await w.relay.drainAll();
    w.run();
    await eventually(() => Promise.resolve(w.outcomes.length === 1), 15_000);
    expect(w.outcomes).toEqual([{ stamped: 0, skipped: 0, deadLettered: 2, retried: 0 }]);
    expect(letters.map((l) => l.outboxId).sort()).toEqual(rows.map((r) => r.outboxId).sort());
    expect((await invoicesOf(rows)).map((i) => i.outbox[0]!.status)).toEqual(['failed', 'failed']);
    for (const r of rows) expect(await w.queue.getJob(r.stampKey)).toBeUndefined();
  });

  it('the sweeper leaves a row waiting in its group, and publishes it again once the group job is gone', async () => {
    const w = worker({ sweeperStaleMs: 0 });
    const rows = await pendingInvoices('swept', 2);
    await w.relay.drainAll();
    const [group] = await w.queue.getJobs(['waiting']);
    expect(await w.sweeper.sweepOnce()).toBe(0);
    // What a flushed Redis does to it.
    await group!.remove();
    expect(await w.sweeper.sweepOnce()).toBe(2);
    const outbox = await prisma.outboxRow.findMany({ where: { id: { in: rows.map((r) => r.outboxId) } } });
    expect(outbox.map((o) => o.status)).toEqual(['pending', 'pending']);
    // Published again in a new group, and stamped.
    await w.relay.drainAll();
    const [again] = await w.queue.getJobs(['waiting']);
    expect(again!.id).not.toBe(group!.id);
    w.run();
    await eventually(() => allStamped(rows), 15_000);
    expect(await stampsOf(rows)).toEqual(rows.map((r) => r.stampKey).sort());
  });
});
