import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { withConcepto } from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import {
  eventually,
  pendingInvoice,
  redisFor,
  startSandboxProcess,
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
});
afterEach(async () => {
  while (closers.length) await closers.pop()!();
  await sandbox.admin('faults', { instance: 'primary', reset: true });
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await redis.quit();
  await db.drop();
});

/** The worker's metrics, as main.ts wires them: each test reads the cancellations it ended. */
let metrics: ReturnType<typeof createWorkerMetrics>;
function worker() {
  metrics = createWorkerMetrics({
    prisma,
    chain: { breakers: new Map() } as unknown as Parameters<typeof createWorkerMetrics>[0]['chain'],
  });
  const w = testWorker(
    { prisma, redis, sandbox },
    {
      retry: { attempts: 8, baseDelayMs: 50, maxDelayMs: 200 },
      onCancellation: (outcome) => metrics.recordCancellation(outcome),
    },
  );
  closers.push(w.close);
  return w;
}

/** `timbra_cancellations_total` by outcome, as scraped. */
async function cancellationsCounted(): Promise<Record<string, number>> {
  const metric = await metrics.registry.getSingleMetric('timbra_cancellations_total')!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.outcome), v.value]));
}

/** A stamped invoice (through the worker and the sandbox). Total 1160.00 unless `total9000`. */
async function stampedInvoice(w: ReturnType<typeof worker>, tag: string, total9000 = false) {
  const p = await pendingInvoice(prisma, tag, total9000 ? withConcepto('9000.00') : {});
  await w.relay.drainAll();
  await eventually(
    async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } })).status === 'stamped',
  );
  return p.invoiceId;
}

/** What POST /v1/invoices/:id/cancel writes (the API's transaction, in SQL). */
async function requestCancel(invoiceId: string, motivo = '02') {
  const request = await prisma.cancelRequest.create({ data: { invoiceId, motivo } });
  await prisma.$transaction([
    prisma.outboxRow.create({
      data: { kind: 'cancel', invoiceId, stampKey: `cancel-${request.id}`, cancelRequestId: request.id },
    }),
    prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'cancel_requested' } }),
  ]);
  return request.id;
}

const state = async (invoiceId: string, requestId: string) => ({
  invoice: (await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } })).status,
  request: await prisma.cancelRequest.findUniqueOrThrow({ where: { id: requestId } }),
  outbox: (await prisma.outboxRow.findUniqueOrThrow({ where: { cancelRequestId: requestId } })).status,
});

interface LedgerStamp {
  uuid: string;
  cancellation?: { requestedAt: number; motivo: string };
}
const ledgerEntry = async (uuid: string) =>
  ((await sandbox.admin('ledger', undefined)) as { stamps: LedgerStamp[] }).stamps.find((s) => s.uuid === uuid);

describe('cancellation against the sandbox', () => {
  it('without acceptance: the PAC accepts (201, acuse kept), the SAT says Cancelado, the invoice is cancelled', async () => {
    const w = worker();
    const invoiceId = await stampedInvoice(w, 'cancel-plain');
    const requestId = await requestCancel(invoiceId);
    await w.relay.drainAll();
    await eventually(async () => (await state(invoiceId, requestId)).invoice === 'cancelled');
    const { request, outbox } = await state(invoiceId, requestId);
    const { uuid } = await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    expect(request).toMatchObject({
      status: 'cancelled',
      uuidCode: '201',
      pac: 'primary',
      estatusCancelacion: 'Cancelado sin aceptación',
    });
    expect(request.acuse).toContain(uuid!);
    expect(outbox).toBe('done');
    expect((await ledgerEntry(uuid!))?.cancellation).toMatchObject({ motivo: '02' });
    // Counted when it ended (the status is written first, the count follows it).
    await eventually(async () => (await cancellationsCounted()).cancelled === 1);
    expect(await cancellationsCounted()).toEqual({ cancelled: 1 });
  });

  it('with acceptance: En proceso is followed (polls) until Cancelado con aceptación', async () => {
    const w = worker();
    const invoiceId = await stampedInvoice(w, 'cancel-acceptance', true);
    const requestId = await requestCancel(invoiceId);
    await w.relay.drainAll();
    await eventually(async () => (await state(invoiceId, requestId)).invoice === 'cancelled', 15_000);
    const { request } = await state(invoiceId, requestId);
    expect(request).toMatchObject({ status: 'cancelled', estatusCancelacion: 'Cancelado con aceptación' });
    expect(request.polls).toBeGreaterThan(0);
  });

  it('rejected by the receptor: the request is rejected with the reason, the invoice is stamped again', async () => {
    await sandbox.admin('faults', { instance: 'primary', rejectCancellationBy: ['CACX7605101P8'] });
    const w = worker();
    const invoiceId = await stampedInvoice(w, 'cancel-rejected', true);
    const requestId = await requestCancel(invoiceId);
    await w.relay.drainAll();
    await eventually(async () => (await state(invoiceId, requestId)).request.status === 'rejected', 15_000);
    expect(await state(invoiceId, requestId)).toMatchObject({
      invoice: 'stamped',
      outbox: 'done',
      request: { reason: expect.stringContaining('Solicitud rechazada') },
    });
    await eventually(async () => (await cancellationsCounted()).rejected === 1);
    expect(await cancellationsCounted()).toEqual({ rejected: 1 });
  });

  it('a cancellation whose answer was lost is asked again: 202, one cancellation at the SAT', async () => {
    const w = worker();
    const invoiceId = await stampedInvoice(w, 'cancel-dropped');
    await sandbox.admin('faults', { instance: 'primary', dropRate: 1, dropMode: 'destroy' });
    const requestId = await requestCancel(invoiceId);
    await w.relay.drainAll();
    const { uuid } = await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    await eventually(async () => (await ledgerEntry(uuid!))?.cancellation !== undefined);
    const first = (await ledgerEntry(uuid!))!.cancellation!.requestedAt;
    await sandbox.admin('faults', { instance: 'primary', reset: true });
    await eventually(async () => (await state(invoiceId, requestId)).invoice === 'cancelled', 15_000);
    expect((await state(invoiceId, requestId)).request.uuidCode).toBe('202');
    expect((await ledgerEntry(uuid!))!.cancellation!.requestedAt).toBe(first);
  });

  it('a PAC that refuses the request (motivo 01 with a substitute it does not know) fails it; the invoice stays stamped', async () => {
    const w = worker();
    const invoiceId = await stampedInvoice(w, 'cancel-refused');
    const request = await prisma.cancelRequest.create({
      data: { invoiceId, motivo: '01', folioSustitucion: '00000000-0000-4000-8000-000000000000' },
    });
    await prisma.$transaction([
      prisma.outboxRow.create({
        data: { kind: 'cancel', invoiceId, stampKey: `cancel-${request.id}`, cancelRequestId: request.id },
      }),
      prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'cancel_requested' } }),
    ]);
    await w.relay.drainAll();
    await eventually(async () => (await state(invoiceId, request.id)).request.status === 'failed', 15_000);
    expect(await state(invoiceId, request.id)).toMatchObject({
      invoice: 'stamped',
      request: { reason: expect.stringContaining('CA1004') },
    });
    // Counted as failed: what TimbraCancellationFailed (docs/alerts.md) fires on.
    await eventually(async () => (await cancellationsCounted()).failed === 1);
    expect(await cancellationsCounted()).toEqual({ failed: 1 });
  });
});
