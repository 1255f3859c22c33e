/**
 * The facturas globales' close timer runs in the worker (its sweeper role): the API only records the
 * tickets. Real processes: the API in global mode, two workers (both running the timer every second
 * with no close delay) and the PAC sandbox. A period that ended is issued once — one global, however
 * many workers looked at it — and stamped; today's period stays open; the workers' metrics and logs
 * say what the timer did.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import got from 'got';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import {
  eventually,
  freePorts,
  redisFor,
  startApiProcess,
  startSandboxProcess,
  startWorkerProcess,
  type SandboxProcess,
} from './helpers.ts';

const API_KEY = 'globals-timer-key-0123456789';
const prefix = `{tglob${randomBytes(4).toString('hex')}}`;
const redis = redisFor();

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY, {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    PUBLICO_GENERAL_MODE: 'global',
  });
});
afterAll(async () => {
  await api?.stop();
  await sandbox?.stop();
  await prisma?.$disconnect();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await db?.drop();
});

/** Every line a child writes to stdout. */
function linesOf(child: ChildProcess): string[] {
  const lines: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return lines;
}

const sale = (externalId: string, amount: string, occurredAt: Date) =>
  got
    .post(`${api.url}/v1/payments`, {
      json: { externalId, amount, currency: 'MXN', occurredAt: occurredAt.toISOString() },
      headers: { authorization: `Bearer ${API_KEY}` },
    })
    .json<{ ticket: { id: string; period: string; status: string } }>();

describe("the worker's close timer", () => {
  it('issues an ended period once across two workers, the global is stamped, today stays open; metrics and logs say so', async () => {
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    const first = await sale('TILL-1', '116.00', twoDaysAgo);
    const second = await sale('TILL-2', '58.00', twoDaysAgo);
    const today = await sale('TILL-3', '10.00', new Date());
    expect(first.ticket.period).toBe(second.ticket.period);
    expect(today.ticket.period).not.toBe(first.ticket.period);

    const ports = await freePorts(2);
    const workers = ports.map((port) =>
      startWorkerProcess(
        { databaseUrl: db.url, sandbox },
        prefix,
        {
          WORKER_ROLES: 'relay,sweeper,stamper',
          WORKER_HTTP_PORT: String(port),
          GLOBAL_CLOSE_DELAY_MINUTES: '0',
          GLOBAL_CLOSE_POLL_SECONDS: '1',
          LOG_LEVEL: 'info',
        },
        'pipe',
      ),
    );
    const logs = workers.map(linesOf);
    try {
      // Issued and stamped: one period row, one global (two tickets), its CFDI stamped.
      await eventually(async () => {
        const periods = await prisma.globalPeriod.findMany({ include: { invoices: true } });
        return periods.length === 1 && periods[0]!.invoices.every((i) => i.status === 'stamped');
      }, 30_000);
      const [period] = await prisma.globalPeriod.findMany({ include: { invoices: true } });
      expect(period).toMatchObject({ tickets: 2, issuedBy: 'schedule', parts: 1 });
      expect(period!.startsOn.toISOString().slice(0, 10)).toBe(first.ticket.period);
      expect(period!.total.toFixed(2)).toBe('174.00');
      expect(period!.invoices[0]!.frozenXml).toContain('<cfdi:InformacionGlobal');
      const tickets = await prisma.ticket.findMany({ orderBy: { createdAt: 'asc' } });
      expect(tickets.map((t) => t.status)).toEqual(['in_global', 'in_global', 'open']);

      // Each worker's metrics: one issued the period (by the schedule), the other found it issued;
      // the lag is 0 once the global is stamped (today's period has not ended).
      const metricsOf = (port: number) => got.get(`http://127.0.0.1:${port}/metrics`, { retry: { limit: 0 } }).text();
      const issued = (text: string) =>
        Number(/^timbra_global_periods_issued_total\{by="schedule"\} (\d+)/m.exec(text)?.[1] ?? 0);
      await eventually(async () => {
        const texts = await Promise.all(ports.map(metricsOf));
        return (
          texts.reduce((sum, t) => sum + issued(t), 0) === 1 &&
          texts.every((t) => /^timbra_global_period_lag_seconds\{organization="[0-9a-f-]{36}"\} 0$/m.test(t))
        );
      }, 15_000);
      const issuedLines = logs.flat().filter((l) => l.includes('"msg":"factura global issued"'));
      expect(issuedLines).toHaveLength(1);
      expect(JSON.parse(issuedLines[0]!)).toMatchObject({ period: first.ticket.period, tickets: 2, total: '174.00' });
    } finally {
      for (const w of workers) w.kill('SIGTERM');
      await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(null) : w.once('exit', r)))));
    }
  });
});
