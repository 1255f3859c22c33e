import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { eventually, pendingInvoice, startSandboxProcess, type SandboxProcess } from './helpers.ts';

const here = dirname(fileURLToPath(import.meta.url));
let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
  sandbox = await startSandboxProcess();
});
afterAll(async () => {
  await sandbox.stop();
  await prisma.$disconnect();
  await db.drop();
});

/** The worker's real entry point as a child process. */
function startWorker(prefix: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', '--conditions=@timbra/source', resolve(here, '../src/main.ts')], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      TIMBRA_PROFILE: 'sandbox',
      DATABASE_URL: db.url,
      QUEUE_PREFIX: prefix,
      PAC_PRIMARY_URL: sandbox.primary,
      // Port 0: the test must pass while `npm run dev` holds the default port.
      WORKER_HTTP_PORT: '0',
      STAMP_LOCK_MS: '2000',
      RELAY_POLL_MS: '200',
      STAMP_BACKOFF_BASE_MS: '100',
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );

interface Ledger {
  stamps: { customid?: string; uuid: string }[];
  received: { customid?: string }[];
}

describe('the worker process', () => {
  it('on SIGTERM stops claiming, finishes the job in flight and exits 0', async () => {
    await sandbox.admin('faults', { instance: 'primary', reset: true, latencyMs: 1500 });
    const prefix = `{p${randomBytes(4).toString('hex')}}`;
    const p = await pendingInvoice(prisma, 'sigterm');
    const worker = startWorker(prefix);
    const exit = exited(worker);
    await eventually(
      async () =>
        ((await sandbox.admin('ledger', undefined)) as Ledger).received.some((r) => r.customid === p.stampKey) ||
        (await prisma.outboxRow.findUniqueOrThrow({ where: { id: p.outboxId } })).status === 'enqueued',
      20_000,
    );
    await new Promise((r) => setTimeout(r, 300)); // the request is at the PAC now
    worker.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    const invoice = await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } });
    expect(invoice.status).toBe('stamped');
  });

  it('a worker killed with SIGKILL mid-job: another worker finishes the job, with the same single UUID', async () => {
    await sandbox.admin('faults', { instance: 'primary', reset: true, latencyMs: 1500 });
    const prefix = `{k${randomBytes(4).toString('hex')}}`;
    const p = await pendingInvoice(prisma, 'sigkill');
    const first = startWorker(prefix);
    await eventually(
      async () =>
        ((await sandbox.admin('ledger', undefined)) as Ledger).received.some((r) => r.customid === p.stampKey),
      20_000,
    );
    first.kill('SIGKILL');
    await exited(first);
    await sandbox.admin('faults', { instance: 'primary', reset: true });
    const second = startWorker(prefix);
    try {
      await eventually(
        async () => (await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } })).status === 'stamped',
        30_000,
      );
      const ledger = (await sandbox.admin('ledger', undefined)) as Ledger;
      const stamps = ledger.stamps.filter((s) => s.customid === p.stampKey);
      expect(stamps).toHaveLength(1);
      expect((await prisma.invoice.findUniqueOrThrow({ where: { id: p.invoiceId } })).uuid).toBe(stamps[0]!.uuid);
    } finally {
      second.kill('SIGTERM');
      await exited(second);
    }
  });
});
