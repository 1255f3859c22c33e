import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import got from 'got';
import { privateRedisArgs, realClockEnv } from '@timbra/test-support';
import {
  eventually,
  freePort,
  freePorts,
  pendingInvoice,
  startSandboxProcess,
  startWorkerProcess,
  testEmisor,
  type SandboxProcess,
} from './helpers.ts';

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

/** The worker's real entry point as a child process, on this file's database and sandbox. */
const startWorker = (prefix: string, env: Record<string, string> = {}, stdio: 'ignore' | 'pipe' = 'ignore') =>
  startWorkerProcess({ databaseUrl: db.url, sandbox }, prefix, env, stdio);

/** Every line a child writes to stdout and stderr. */
function linesOf(child: ChildProcess): string[] {
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    stream?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return lines;
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

  it('without Redis: the health port answers at once, not ready and why, JSON logs, and recovers when Redis comes', async () => {
    const [redisPort, healthPort] = (await freePorts(2)) as [number, number];
    const worker = startWorker(
      `{r${randomBytes(4).toString('hex')}}`,
      { REDIS_URL: `redis://127.0.0.1:${redisPort}`, WORKER_HTTP_PORT: String(healthPort), LOG_LEVEL: 'info' },
      'pipe',
    );
    const lines = linesOf(worker);
    let redis: ChildProcess | undefined;
    try {
      const readyz = () =>
        got.get(`http://127.0.0.1:${healthPort}/readyz`, { throwHttpErrors: false, retry: { limit: 0 } });
      await eventually(async () => (await readyz().catch(() => undefined))?.statusCode === 503, 20_000);
      expect((await got.get(`http://127.0.0.1:${healthPort}/healthz`)).statusCode).toBe(200);
      const notReady = JSON.parse((await readyz()).body) as { ok: boolean; checks: Record<string, string> };
      expect(notReady).toMatchObject({ ok: false, checks: { redis: expect.stringMatching(/^unreachable: /) } });
      await eventually(() => Promise.resolve(lines.some((l) => /redis unreachable; retrying/.test(l))), 10_000);
      // Every line it wrote is a JSON log line.
      for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();

      redis = spawn('redis-server', privateRedisArgs(redisPort), { stdio: 'ignore', env: realClockEnv() });
      await eventually(async () => (await readyz()).statusCode === 200, 60_000);
      expect(JSON.parse((await readyz()).body)).toEqual({
        ok: true,
        checks: { postgres: 'ok', redis: 'ok', consumer: 'ok' },
      });
      expect(lines.some((l) => /worker started/.test(l))).toBe(true);
    } finally {
      worker.kill('SIGTERM');
      await exited(worker);
      redis?.kill('SIGKILL');
    }
  });

  it('before the API has made its organization: not ready and why, then runs once it exists', async () => {
    const fresh = await createTestDatabase();
    const owner = createPrisma(fresh.url, { poolSize: 1 });
    const healthPort = await freePort();
    const worker = startWorkerProcess(
      { databaseUrl: fresh.url, sandbox },
      `{o${randomBytes(4).toString('hex')}}`,
      { WORKER_HTTP_PORT: String(healthPort), LOG_LEVEL: 'info' },
      'pipe',
    );
    const lines = linesOf(worker);
    try {
      const readyz = () =>
        got.get(`http://127.0.0.1:${healthPort}/readyz`, { throwHttpErrors: false, retry: { limit: 0 } });
      await eventually(async () => (await readyz().catch(() => undefined))?.statusCode === 503, 20_000);
      await eventually(async () => /no organization/.test((await readyz()).body), 20_000);
      expect(JSON.parse((await readyz()).body)).toMatchObject({
        ok: false,
        checks: {
          organization:
            'unreachable: no organization for EMISOR_RFC EKU9003173C9 yet: the API makes it at its first start',
        },
      });
      await testEmisor(owner);
      await eventually(async () => (await readyz()).statusCode === 200, 60_000);
      expect(lines.some((l) => /worker started/.test(l))).toBe(true);
    } finally {
      worker.kill('SIGTERM');
      await exited(worker);
      await owner.$disconnect();
      await fresh.drop();
    }
  });

  it('SIGTERM with Redis gone: the outage told once in JSON, and an exit within WORKER_SHUTDOWN_TIMEOUT_MS that says what it waited on', async () => {
    const [redisPort, healthPort] = (await freePorts(2)) as [number, number];
    const redis = spawn('redis-server', privateRedisArgs(redisPort), { stdio: 'ignore', env: realClockEnv() });
    const worker = startWorker(
      `{s${randomBytes(4).toString('hex')}}`,
      {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`,
        WORKER_HTTP_PORT: String(healthPort),
        WORKER_SHUTDOWN_TIMEOUT_MS: '3000',
        LOG_LEVEL: 'info',
      },
      'pipe',
    );
    const lines = linesOf(worker);
    const exit = exited(worker);
    try {
      const readyz = () =>
        got.get(`http://127.0.0.1:${healthPort}/readyz`, { throwHttpErrors: false, retry: { limit: 0 } });
      await eventually(async () => (await readyz().catch(() => undefined))?.statusCode === 200, 60_000);
      redis.kill('SIGKILL');
      await eventually(async () => (await readyz()).statusCode === 503, 20_000);
      // A few reconnection rounds: the outage is told once, not once per attempt and per connection.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const asked = Date.now();
      worker.kill('SIGTERM');
      const { code } = await exit;
      // Bounded by the setting (plus the process's own exit), whatever BullMQ's close does without Redis.
      expect(Date.now() - asked).toBeLessThan(3000 + 5000);
      // Every line it wrote, Redis gone included, is one JSON log line (BullMQ's own stderr text was not).
      const logged = lines.map((l) => JSON.parse(l) as { msg?: string; waitingOn?: string; level?: number });
      expect(logged.filter((l) => l.msg?.startsWith('redis unreachable: retrying'))).toHaveLength(1);
      const shutdownLine = (l: { msg?: string }) => l.msg?.startsWith('shutdown did not finish in time');
      expect(logged.filter((l) => (l.level ?? 0) >= 50 && !shutdownLine(l)).map((l) => l.msg)).toEqual([]);
      if (code !== 0) {
        expect(code).toBe(1);
        const said = logged.find(shutdownLine);
        expect(said).toMatchObject({ waitingOn: expect.any(String), level: 50 });
        expect(said!.msg).toContain(said!.waitingOn);
      }
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
      redis.kill('SIGKILL');
    }
  });

  it('a fatal error is one JSON line and a non-zero exit: a bad setting, an evicting Redis', async () => {
    const bad = startWorker('{bad}', { WORKER_CONCURRENCY: 'many' }, 'pipe');
    const badLines = linesOf(bad);
    expect((await exited(bad)).code).toBe(1);
    const fatal = JSON.parse(badLines.find((l) => l.includes('"level":60'))!) as { msg: string; problems: string[] };
    expect(fatal.msg).toBe('invalid worker configuration:');
    expect(fatal.problems).toEqual([expect.stringMatching(/^WORKER_CONCURRENCY: /)]);

    const redisPort = await freePort();
    const redis = spawn('redis-server', privateRedisArgs(redisPort, 'allkeys-lru'), {
      stdio: 'ignore',
      env: realClockEnv(),
    });
    try {
      const evicting = startWorker(
        '{evicting}',
        { REDIS_URL: `redis://127.0.0.1:${redisPort}`, WORKER_HTTP_PORT: '0' },
        'pipe',
      );
      const lines = linesOf(evicting);
      expect((await exited(evicting)).code).toBe(1);
      const line = JSON.parse(lines.find((l) => l.includes('"level":60'))!) as { msg: string };
      expect(line.msg).toMatch(/maxmemory-policy must be noeviction/);
    } finally {
      redis.kill('SIGKILL');
    }
  });
});
