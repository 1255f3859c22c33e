/**
 * The on-call night, in a real browser (Playwright driving Debian's Chromium): the PAC refuses an
 * invoice, the worker dead-letters it; the operator opens /admin/queues with the dashboard's
 * credentials, finds the dead letter by its serie-folio, finds nothing destructive to click, opens
 * it and retries it with a reason; the invoice is stamped, the letter is settled on the board with
 * who re-drove it, the dead-letter metric falls to 0 and the re-drive is in the invoice's history.
 * The API and the PAC sandbox run as their real processes; the worker is the real createWorker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import got from 'got';
import type { Browser } from 'playwright-core';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import { PacChain } from '../src/stamping/pac-chain.ts';
import {
  eventually,
  redisFor,
  startApiProcess,
  startSandboxProcess,
  swClients,
  testWorker,
  type SandboxProcess,
  artifactsDir,
  launchChromium,
} from './helpers.ts';

const API_KEY = 'dashboard-browser-key-0123456789';
const USER = 'oncall';
const PASSWORD = 'dashboard-browser-secret-0123';
const prefix = `{tdash${randomBytes(4).toString('hex')}}`;

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let browser: Browser;
const redis = redisFor();

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY, {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    DASHBOARD_USER: USER,
    DASHBOARD_PASSWORD: PASSWORD,
    DASHBOARD_ALLOW_DLQ_RETRY: 'true',
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await sandbox?.stop();
  await prisma?.$disconnect();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await db?.drop();
});

const auth = { authorization: `Bearer ${API_KEY}` };

describe('the queue dashboard in a browser', () => {
  it('finds a dead letter by serie-folio, offers nothing destructive, retries it, and the DLQ tells the truth after', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { prefix });
    const metrics = createWorkerMetrics({
      prisma,
      chain: new PacChain(swClients(sandbox), { threshold: 3, coolDownMs: 1 }),
    });
    const deadLetters = async () =>
      Number(
        /timbra_dead_letters\{organization="[0-9a-f-]+"\} (\d+)/.exec(
          await metrics.registry.getSingleMetricAsString('timbra_dead_letters'),
        )![1],
      );
    try {
      // The PAC refuses the emisor: a permanent rejection, dead-lettered at once.
      await sandbox.admin('faults', { instance: 'primary', rejectRfcs: ['EKU9003173C9'] });
      await sandbox.admin('faults', { instance: 'backup', rejectRfcs: ['EKU9003173C9'] });
      const payment = await got
        .post(`${api.url}/v1/payments`, {
          json: { externalId: 'DASH-1', amount: '580.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: auth,
        })
        .json<{ invoices: { id: string; serieFolio: string }[] }>();
      const { id: invoiceId, serieFolio } = payment.invoices[0]!;
      await w.relay.drainAll();
      await eventually(async () => (await w.dlq.getFailedCount()) === 1);
      expect(await deadLetters()).toBe(1);
      await sandbox.admin('faults', { instance: 'primary', reset: true });
      await sandbox.admin('faults', { instance: 'backup', reset: true });

      const context = await browser.newContext({ httpCredentials: { username: USER, password: PASSWORD } });
      const page = await context.newPage();
      await page.goto(`${api.url}/admin/queues/queue/stamp-dlq?status=failed`);
      // The letter, by its serie-folio, with the PAC's reason.
      const letter = page.getByText(`dead-letter ${serieFolio}`, { exact: false });
      await letter.first().waitFor({ timeout: 15_000 });
      // A real consumer: no "No workers" badge on the dead-letter queue.
      expect(await page.getByText('No workers').count()).toBe(0);
      // Nothing destructive anywhere on the board: no clean, delete, empty, obliterate, add, edit,
      // duplicate, pause or promote (bull-board's own job and queue actions).
      const actions = await page
        .locator('button, [role="button"], [role="menuitem"], a')
        .evaluateAll((nodes: { textContent: string | null; getAttribute: (name: string) => string | null }[]) =>
          nodes.map(
            (n) => `${n.textContent ?? ''} ${n.getAttribute('title') ?? ''} ${n.getAttribute('aria-label') ?? ''}`,
          ),
        );
      expect(
        actions.filter((a) =>
          /clean|delete|remove|empty|obliterate|add job|update|edit|duplicate|pause|promote/i.test(a),
        ),
      ).toEqual([]);
      await page.screenshot({ path: join(artifactsDir(), 'dashboard-dead-letter.png'), fullPage: true });

      // Open it from the board, and retry it with a reason.
      // (bull-board opens a job's link in a new tab.)
      const [letterPage] = await Promise.all([
        context.waitForEvent('page'),
        page.getByRole('link', { name: 'Open / re-drive' }).first().click(),
      ]);
      await letterPage.getByText(`Dead letter ${serieFolio}`).first().waitFor();
      await letterPage.getByLabel(/Why/).fill('the PAC registered the emisor again');
      // The PAC refused it for good (the emisor not in the LCO): the page says to correct it, and a
      // retry of the same bytes needs the box that says what the PAC checked has changed.
      await letterPage.getByText('Permanent — correct it').waitFor();
      await letterPage.screenshot({ path: join(artifactsDir(), 'dashboard-permanent.png'), fullPage: true });
      await letterPage.getByRole('button', { name: `Retry ${serieFolio}` }).click();
      await letterPage.getByText('Permanent: the PAC refused these bytes for good').waitFor();
      expect(await deadLetters()).toBe(1);
      await letterPage.goBack();
      await letterPage.getByLabel(/Why/).fill('the PAC registered the emisor again');
      await letterPage.getByLabel(/What the PAC checked has changed/).check();
      await letterPage.getByRole('button', { name: `Retry ${serieFolio}` }).click();
      await letterPage.getByText(`Re-driven: ${serieFolio} is back to pending`).waitFor();
      await letterPage.screenshot({ path: join(artifactsDir(), 'dashboard-redriven.png'), fullPage: true });
      expect(await deadLetters()).toBe(0);

      await w.relay.drainAll();
      await eventually(
        async () =>
          (await got.get(`${api.url}/v1/invoices/${invoiceId}`, { headers: auth }).json<{ status: string }>())
            .status === 'stamped',
      );
      // The letter is settled on the board: completed, naming who re-drove it; none is left failed.
      await eventually(async () => (await w.dlq.getFailedCount()) === 0 && (await w.dlq.getCompletedCount()) === 1);
      await page.goto(`${api.url}/admin/queues/queue/stamp-dlq?status=completed`);
      await page
        .getByText(`dead-letter ${serieFolio} → re-driven by dashboard:${USER}`)
        .first()
        .waitFor({ timeout: 15_000 });

      // The audit trail, in the invoice's history.
      const view = await got
        .get(`${api.url}/v1/invoices/${invoiceId}`, { headers: auth })
        .json<{ history: { redrives: { by: string; reason: string; lastError: string }[] } }>();
      expect(view.history.redrives).toEqual([
        expect.objectContaining({ by: `dashboard:${USER}`, reason: 'the PAC registered the emisor again' }),
      ]);
      expect(view.history.redrives[0]!.lastError).toMatch(/EKU9003173C9|RFC|\d{3}/);
      await context.close();
    } finally {
      await w.close();
    }
  });
});
