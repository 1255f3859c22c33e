/** @clock backoff, failedAt and re-drives against the dead letter's time */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { parseStampedCfdi, stampedXmlOf } from '@timbra/cfdi-core';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { recordPacCallInFlight, redriveOutboxRow } from '@timbra/db/outbox';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { Queue, type Job } from 'bullmq';
import pino from 'pino';
import type { DeadLetterData, StampGroupData, StampJobData } from '../src/stamping/jobs.ts';
import { PacChain, stickyPac } from '../src/stamping/pac-chain.ts';
import type { GroupOutcome } from '../src/stamping/stamp-group.ts';
import { createStampProcessor } from '../src/stamping/stamp-processor.ts';
import { stampWrites, type StampWrites } from '../src/stamping/stamp-writes.ts';
import {
  eventually,
  pendingInvoice,
  redisFor,
  startSandboxProcess,
  swClients,
  testWorker,
  warmSandbox,
  type SandboxProcess,
} from './helpers.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
const redis = redisFor();
const closers: (() => Promise<void>)[] = [];

interface Ledger {
  stamps: { uuid: string; customid?: string; instance: string }[];
  received: { instance: string; customid?: string; xmlSha256: string; outcome: string }[];
}

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  await warmSandbox(sandbox);
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  await sandbox.admin('faults', { instance: 'primary', reset: true });
  await sandbox.admin('faults', { instance: 'backup', reset: true });
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

/** A worker on its own queue prefix (isolated per test), not autorun until asked. */
function worker(options: { attempts?: number; letters?: DeadLetterData[] } = {}) {
  const chain = new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 60_000 });
  const w = testWorker(
    { prisma, redis, sandbox },
    {
      chain,
      retry: { attempts: options.attempts ?? 6, baseDelayMs: 50, maxDelayMs: 200 },
      alert: (l) => {
        options.letters?.push(l);
      },
    },
  );
  closers.push(w.close);
  return { ...w, chain };
}

const invoice = (id: string) =>
  prisma.invoice.findUniqueOrThrow({ where: { id }, include: { outbox: true, attempts: true } });
const ledger = () => sandbox.admin('ledger', undefined) as Promise<Ledger>;

describe('relay + stamp worker against the sandbox', () => {
  it('stamps a pending invoice end to end: UUID, TFD, stamped XML with the frozen Sello, outbox done, attempt recorded', async () => {
    const w = worker();
    const p = await pendingInvoice(prisma, 'happy');
    expect(await w.relay.drainAll()).toBe(1);
    expect((await prisma.outboxRow.findUniqueOrThrow({ where: { id: p.outboxId } })).status).toBe('enqueued');
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped');
    const stamped = await invoice(p.invoiceId);
    expect(stamped.outbox[0]!.status).toBe('done');
    expect(stamped.pac).toBe('primary');
    expect(stamped.attempts).toEqual([
      expect.objectContaining({ pac: 'primary', outcome: 'stamped', uuid: stamped.uuid }),
    ]);
    // The stamped CFDI is the frozen bytes with the PAC's TFD: not stored a second time.
    expect(stamped.stampedXml).toBeNull();
    const parsed = parseStampedCfdi(stampedXmlOf(stamped)!);
    expect(parsed.tfd.uuid).toBe(stamped.uuid);
    expect(parsed.sello).toBe(parsed.tfd.selloCFD);
    expect(stamped.frozenXml).toBe(p.frozenXml);
  });

  it('stamp-then-drop on the primary → retried on the primary → the same UUID, one stamp in the ledger', async () => {
    await sandbox.admin('faults', { instance: 'primary', dropRate: 1 });
    const w = worker();
    const p = await pendingInvoice(prisma, 'drop');
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).attempts.some((a) => a.outcome === 'ambiguous'));
    await sandbox.admin('faults', { instance: 'primary', reset: true });
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped');
    const stamped = await invoice(p.invoiceId);
    const l = await ledger();
    const mine = l.stamps.filter((s) => s.customid === p.stampKey);
    expect(mine).toEqual([expect.objectContaining({ uuid: stamped.uuid, instance: 'primary' })]);
    expect(stamped.attempts.every((a) => a.pac === 'primary')).toBe(true);
    // Every attempt sent the same bytes.
    const sent = new Set(l.received.filter((r) => r.customid === p.stampKey).map((r) => r.xmlSha256));
    expect([...sent]).toEqual([createHash('sha256').update(p.frozenXml, 'utf8').digest('hex')]);
  });

  it('primary refusing connections → the backup stamps; when the primary is back, new work goes to it', async () => {
    await sandbox.admin('faults', { instance: 'primary', outageUntil: Date.now() + 60_000 });
    const w = worker();
    const p = await pendingInvoice(prisma, 'failover');
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped');
    expect((await invoice(p.invoiceId)).pac).toBe('backup');
    await sandbox.admin('faults', { instance: 'primary', outageUntil: 0 });
    await new Promise((r) => setTimeout(r, 200));
    const w2 = worker();
    const q = await pendingInvoice(prisma, 'back');
    await w2.relay.drainAll();
    await eventually(async () => (await invoice(q.invoiceId)).status === 'stamped');
    expect((await invoice(q.invoiceId)).pac).toBe('primary');
  });

  it('primary ambiguous then down → the document does not go to the backup while the primary may hold it', async () => {
    await sandbox.admin('faults', { instance: 'primary', dropRate: 1 });
    const w = worker({ attempts: 50 });
    const p = await pendingInvoice(prisma, 'sticky');
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).attempts.some((a) => a.outcome === 'ambiguous'));
    await sandbox.admin('faults', { instance: 'primary', reset: true, outageUntil: Date.now() + 1_500 });
    await eventually(
      async () => (await invoice(p.invoiceId)).attempts.filter((a) => a.outcome === 'transient').length >= 2,
    );
    expect((await invoice(p.invoiceId)).attempts.some((a) => a.pac === 'backup')).toBe(false);
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped', 30_000);
    const l = await ledger();
    expect(l.stamps.filter((s) => s.customid === p.stampKey)).toHaveLength(1);
    expect((await invoice(p.invoiceId)).pac).toBe('primary');
  });

  it('a worker killed during a PAC call (its attempt left in_flight) → the retry stays with that PAC, even while it is down', async () => {
    const p = await pendingInvoice(prisma, 'killed');
    // What a killed worker leaves: the primary stamped the document, our record says only "sent".
    const [primary] = swClients(sandbox);
    const earlier = await primary!.stamp(p.frozenXml, { idempotencyKey: p.stampKey });
    const killedCall = randomUUID();
    await recordPacCallInFlight(prisma, { ...p, version: 1, pac: 'primary', id: killedCall });
    await sandbox.admin('faults', { instance: 'primary', outageUntil: Date.now() + 1_500 });
    const w = worker({ attempts: 50 });
    await w.relay.drainAll();
    await eventually(
      async () => (await invoice(p.invoiceId)).attempts.filter((a) => a.outcome === 'transient').length >= 1,
    );
    expect((await invoice(p.invoiceId)).attempts.some((a) => a.pac === 'backup')).toBe(false);
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped', 30_000);
    const stamped = await invoice(p.invoiceId);
    expect(stamped).toMatchObject({ pac: 'primary', uuid: earlier.uuid });
    expect((await ledger()).stamps.filter((s) => s.customid === p.stampKey)).toHaveLength(1);
    // The killed worker's call is closed once the outcome is known: nothing stays in_flight for ever.
    const calls = await prisma.pacAttempt.findMany({ where: { invoiceId: p.invoiceId } });
    expect(calls.find((c) => c.id === killedCall)?.outcome).toBe('interrupted');
    expect(calls.filter((c) => c.outcome === 'in_flight')).toEqual([]);
  });

  it('records each PAC call before making it, and its outcome on the same row after', async () => {
    const w = worker();
    const p = await pendingInvoice(prisma, 'write-ahead');
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped');
    const attempts = (await invoice(p.invoiceId)).attempts;
    expect(attempts.map((a) => a.outcome)).toEqual(['stamped']);
    expect(stickyPac([{ pac: 'primary', outcome: 'in_flight' }])).toBe('primary');
    expect(
      stickyPac([
        { pac: 'primary', outcome: 'in_flight' },
        { pac: 'primary', outcome: 'transient' },
      ]),
    ).toBe('primary');
    expect(
      stickyPac([
        { pac: 'primary', outcome: 'in_flight' },
        { pac: 'primary', outcome: 'already_stamped' },
      ]),
    ).toBe(undefined);
  });

  it('twelve concurrent jobs answered together: each stamp persisted whole (their statements shared: stamp-writes.test.ts)', async () => {
    // Every stamp answered after 300 ms, so the jobs reach their persistence at about one time.
    await sandbox.admin('faults', { instance: 'primary', latencyMs: 300 });
    const w = testWorker({ prisma, redis, sandbox }, { concurrency: 12 });
    closers.push(w.close);
    const rows = [];
    for (let i = 0; i < 12; i++) rows.push(await pendingInvoice(prisma, `group-${i}`));
    await w.relay.drainAll();
    const ids = rows.map((r) => r.invoiceId);
    await eventually(
      async () => (await prisma.invoice.count({ where: { id: { in: ids }, status: 'stamped' } })) === 12,
    );
    for (const id of ids) {
      const stamped = await invoice(id);
      expect(stamped.outbox.map((o) => o.status)).toEqual(['done']);
      expect(stamped.attempts).toEqual([expect.objectContaining({ outcome: 'stamped', uuid: stamped.uuid })]);
      expect(parseStampedCfdi(stampedXmlOf(stamped)!).tfd.uuid).toBe(stamped.uuid);
    }
  });

  it('a permanent rejection dead-letters (outbox failed, invoice stamp_failed, DLQ entry, alert); a re-drive stamps the same bytes', async () => {
    await sandbox.admin('faults', { instance: 'primary', rejectRfcs: ['EKU9003173C9'] });
    const letters: DeadLetterData[] = [];
    const w = worker({ letters });
    const p = await pendingInvoice(prisma, 'permanent');
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamp_failed');
    const failed = await invoice(p.invoiceId);
    expect(failed.outbox[0]!.status).toBe('failed');
    expect(failed.outbox[0]!.lastError).toMatch(/^402/);
    expect(failed.attempts).toEqual([expect.objectContaining({ pac: 'primary', outcome: 'permanent', code: '402' })]);
    expect(letters).toEqual([expect.objectContaining({ stampKey: p.stampKey, code: '402', pac: 'primary' })]);
    // The DLQ's consumer holds the letter in the failed set, with the PAC's words.
    await eventually(async () => (await w.dlq.getFailedCount()) === 1);
    const [held] = await w.dlq.getFailed();
    expect(held!.failedReason).toMatch(/^402: /);

    // Fixed (the emisor is in the LCO again) and re-driven: stamped, with the very same bytes.
    await sandbox.admin('faults', { instance: 'primary', reset: true });
    // A permanent refusal is not resent as it is; forced (the emisor is in the LCO again), it is.
    expect(await redriveOutboxRow(prisma, p.outboxId, { by: 'test' })).toMatchObject({
      ok: false,
      reason: 'permanent_rejection',
    });
    expect(await redriveOutboxRow(prisma, p.outboxId, { by: 'test', force: true })).toMatchObject({ ok: true });
    // Re-driven without touching Redis (as the ops CLI does when Redis is away): the sweeper settles
    // the letter — completed, saying who re-drove it — and none is left failed. Two sweeps at once
    // (two workers', or the API's settle after a correction beside a sweep) settle it once, and
    // neither fails on the letter the other settled.
    await Promise.all([w.sweeper.sweepOnce(), w.sweeper.sweepOnce()]);
    await eventually(async () => (await w.dlq.getCompletedCount()) === 1);
    expect(await w.dlq.getFailedCount()).toBe(0);
    const [settled] = await w.dlq.getCompleted();
    expect(settled!.returnvalue).toMatchObject({ dead: false, settled: 'redriven', redrivenBy: 'test' });
    await w.relay.drainAll();
    await eventually(async () => (await invoice(p.invoiceId)).status === 'stamped');
    const sent = (await ledger()).received.filter((r) => r.customid === p.stampKey);
    expect(sent.map((r) => r.outcome)).toEqual(['402', 'stamped']);
    expect(new Set(sent.map((r) => r.xmlSha256)).size).toBe(1);
  });

  it('two relays at once never publish a row twice, and a re-added job id is harmless', async () => {
    const w = worker();
    const rows: Awaited<ReturnType<typeof pendingInvoice>>[] = [];
    for (let i = 0; i < 20; i++) rows.push(await pendingInvoice(prisma, `race-${i}`));
    const [a, b] = await Promise.all([w.relay.drainAll(), w.relay.drainAll()]);
    expect(a + b).toBe(20);
    // A relay that crashed after adding and before committing: the rows come back pending, are re-added.
    await prisma.outboxRow.updateMany({
      where: { id: { in: rows.map((r) => r.outboxId) } },
      data: { status: 'pending' },
    });
    await w.relay.drainAll();
    await eventually(
      async () =>
        (await prisma.invoice.count({ where: { id: { in: rows.map((r) => r.invoiceId) }, status: 'stamped' } })) === 20,
      30_000,
    );
    const l = await ledger();
    for (const r of rows) expect(l.stamps.filter((s) => s.customid === r.stampKey)).toHaveLength(1);
  });
});

describe('the first PAC call recorded with the load (one commit less a payment)', () => {
  /** The stamp processor on the real statements, counting the write-ahead records it makes on its own. */
  function processor(chain = new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 60_000 })) {
    const writes = stampWrites(prisma);
    const counted = { load: 0, recordInFlight: 0 };
    const spied: StampWrites = {
      load: (id, first) => (counted.load++, writes.load(id, first)),
      recordInFlight: (call) => (counted.recordInFlight++, writes.recordInFlight(call)),
      persist: (stamp) => writes.persist(stamp),
    };
    const dlq = new Queue<DeadLetterData>('dlq', { connection: redis, prefix: `{t${randomUUID().slice(0, 8)}}` });
    closers.push(() => dlq.close());
    const process = createStampProcessor({
      prisma,
      writes: spied,
      chain,
      dlq,
      logger: pino({ level: 'silent' }),
      alert: () => undefined,
    });
    // The job as BullMQ hands it over: the processor reads its data, id and attempts.
    const run = (outboxId: string, attemptsMade = 0) =>
      process({ id: randomUUID(), data: { v: 1, outboxId }, attemptsMade, opts: { attempts: 5 } } as Job<StampJobData>);
    return { run, counted };
  }

  it('a first attempt makes no write-ahead statement of its own, yet its call is recorded before it is made', async () => {
    await sandbox.admin('faults', { instance: 'primary', latencyMs: 600 });
    const { run, counted } = processor();
    const p = await pendingInvoice(prisma, 'first-call');
    const job = run(p.outboxId);
    // While the PAC holds the call: the record is there, in flight.
    await eventually(async () => (await invoice(p.invoiceId)).attempts.some((a) => a.outcome === 'in_flight'));
    const during = (await invoice(p.invoiceId)).attempts;
    expect((await ledger()).stamps.filter((s) => s.customid === p.stampKey)).toEqual([]);
    await job;
    const after = await invoice(p.invoiceId);
    expect(after.status).toBe('stamped');
    // Its outcome on the same row.
    expect(after.attempts.map((a) => [a.id, a.pac, a.outcome])).toEqual([[during[0]!.id, 'primary', 'stamped']]);
    expect(counted).toEqual({ load: 1, recordInFlight: 0 });
  });

  it('a retry, whose row has calls already, records its call on its own (the PAC may be pinned)', async () => {
    await sandbox.admin('faults', { instance: 'primary', dropRate: 1 });
    const { run, counted } = processor();
    const p = await pendingInvoice(prisma, 'first-call-retry');
    await expect(run(p.outboxId)).rejects.toThrow(/ambiguous/);
    await sandbox.admin('faults', { instance: 'primary', reset: true });
    await run(p.outboxId, 1);
    const after = await invoice(p.invoiceId);
    expect(after.status).toBe('stamped');
    // The primary stamped before the drop: the retry, pinned to it, gets that stamp back.
    expect(after.attempts.map((a) => [a.pac, a.outcome]).sort()).toEqual([
      ['primary', 'already_stamped'],
      ['primary', 'ambiguous'],
    ]);
    expect(counted).toEqual({ load: 2, recordInFlight: 1 });
  });

  it('a recorded call the chain does not make is closed as NOT_SENT, never left in flight', async () => {
    let now = 0;
    const chain = new PacChain(swClients(sandbox), { threshold: 1, coolDownMs: 1_000, now: () => now });
    // The primary's circuit is open at the load, so the backup's call is the one recorded ahead...
    chain.breakers.get('primary')!.failedNotProcessed();
    const p = await pendingInvoice(prisma, 'not-sent');
    const loaded = await stampWrites(prisma).load(p.outboxId, { pac: chain.firstChoice()!, id: randomUUID() });
    expect(loaded!.recordedCall?.pac).toBe('backup');
    // ...but by the call the primary may be probed again: it is asked first, and stamps.
    now = 1_000;
    const made: string[] = [];
    const beforeSend = (pac: string) => (made.push(pac), Promise.resolve(randomUUID()));
    const { result, attempts } = await chain.stamp(
      p.frozenXml,
      p.stampKey,
      undefined,
      beforeSend,
      loaded!.recordedCall,
    );
    expect(result?.pac).toBe('primary');
    expect(made).toEqual(['primary']);
    expect(attempts.map((a) => [a.pac, a.outcome, a.code])).toEqual([
      ['primary', 'stamped', undefined],
      ['backup', 'transient', 'NOT_SENT'],
    ]);
    expect(attempts[1]!.id).toBe(loaded!.recordedCall!.id);
    // A circuit that opened after the load: the skipped call's record is the one recorded ahead.
    const open = new PacChain(swClients(sandbox), { threshold: 1, coolDownMs: 60_000 });
    const ahead = { pac: 'primary', id: randomUUID() };
    open.breakers.get('primary')!.failedNotProcessed();
    const q = await pendingInvoice(prisma, 'not-sent-open');
    const skipped = await open.stamp(q.frozenXml, q.stampKey, undefined, beforeSend, ahead);
    expect(skipped.attempts.map((a) => [a.id === ahead.id, a.pac, a.outcome, a.code])).toEqual([
      [true, 'primary', 'transient', 'CIRCUIT_OPEN'],
      [false, 'backup', 'stamped', undefined],
    ]);
  });
});

// `stamp-group` jobs (STAMP_JOB_GROUPS): a relay claim's stamp rows in one job. Each row is stamped
// once; a row that fails goes on as a job of its own; the sweeper tells a row waiting in its group
// from a row whose job Redis lost.
describe('stamp-group jobs', () => {
  // A database of their own: a claim takes every pending row, and the tests above leave some.
  let db: TestDatabase;
  let prisma: PrismaClient;
  beforeAll(async () => {
    db = await createTestDatabase();
    prisma = createPrisma(db.url, { poolSize: 5 });
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await db.drop();
  });

  /** A worker with groups on, on a queue of its own, started by the test (`run`). */
  function groupWorker(
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
    const l = await ledger();
    const keys = new Set(rows.map((r) => r.stampKey));
    return l.stamps
      .filter((s) => s.customid !== undefined && keys.has(s.customid))
      .map((s) => s.customid)
      .sort();
  }

  it("publishes a claim's stamp rows as one job naming them, then stamps each row once", async () => {
    const w = groupWorker();
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
    const w = groupWorker();
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
    const w = groupWorker({ attempts: 6, baseDelayMs: 2_000 });
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
    const w = groupWorker({ attempts: 1, letters });
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
    const w = groupWorker({ sweeperStaleMs: 0 });
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
