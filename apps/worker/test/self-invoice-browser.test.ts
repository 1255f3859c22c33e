/**
 * A customer self-invoices a ticket in a real browser (Playwright driving Debian's Chromium): the
 * API runs as its real process in global mode, the worker stamps against the PAC sandbox. The
 * customer types the ticket's code and total and their data, picks a UsoCFDI their régimen does not
 * allow, sees why, corrects it, waits on the ticket's page while the invoice is stamped and
 * downloads the PDF — read back with poppler (text) and rendered to an image. A screenshot of each
 * step is kept in apps/worker/.artifacts/.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import got from 'got';
import type { Browser } from 'playwright-core';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import {
  artifactsDir,
  launchChromium,
  redisFor,
  startApiProcess,
  startSandboxProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

const artifacts = artifactsDir();
const API_KEY = 'self-invoice-browser-key-0123456789';
const prefix = `{tself${randomBytes(4).toString('hex')}}`;

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
    PUBLICO_GENERAL_MODE: 'global',
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

describe('the self-invoicing page in a browser', () => {
  it('fills the form, is told the UsoCFDI is not allowed for the régimen, corrects it and downloads the stamped PDF', async () => {
    const w = testWorker({ prisma, redis, sandbox }, { prefix });
    try {
      // The sale at the till: no customer data, so a ticket with a code printed for the customer.
      const sale = await got
        .post(`${api.url}/v1/payments`, {
          json: { externalId: 'TICKET-1', amount: '1160.00', currency: 'MXN', occurredAt: new Date().toISOString() },
          headers: { authorization: `Bearer ${API_KEY}` },
        })
        .json<{ invoices: unknown[]; ticket: { code: string; status: string } }>();
      expect(sale.invoices).toEqual([]);
      const { code } = sale.ticket;

      const context = await browser.newContext({ acceptDownloads: true, locale: 'es-MX' });
      const page = await context.newPage();
      await page.goto(`${api.url}/facturar`);
      await expect(page.title()).resolves.toMatch(/Factura tu compra/);
      await page.getByLabel('Código del ticket').fill(code.toLowerCase());
      await page.getByLabel('Total del ticket').fill('1,160.00');
      await page.getByLabel('RFC').fill('CACX7605101P8');
      await page.getByLabel('Nombre o razón social').fill('Xochilt Casas Chavez');
      await page.getByLabel('Código postal de tu domicilio fiscal').fill('36257');
      await page.getByLabel('Régimen fiscal').selectOption('605');
      await page.getByLabel('Uso del CFDI').selectOption('G03');
      await page.getByLabel('Correo electrónico (opcional)').fill('xochilt@example.com');
      await page.screenshot({ path: join(artifacts, 'self-invoice-1-filled.png'), fullPage: true });
      await page.getByRole('button', { name: 'Generar factura' }).click();

      // Sueldos y salarios (605) may not use G03: said at the top and beside the field.
      const alert = page.getByRole('alert');
      await alert.waitFor();
      await expect(alert.textContent()).resolves.toContain('El uso G03 no está permitido para el régimen 605');
      const uso = page.getByLabel('Uso del CFDI');
      await expect(uso.getAttribute('aria-invalid')).resolves.toBe('true');
      // The choices are now the ones the SAT allows with 605; what was typed is kept.
      const offered = await uso
        .locator('option')
        .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value));
      expect(offered).toContain('D10');
      expect(offered).not.toContain('G03');
      await expect(page.getByLabel('RFC').inputValue()).resolves.toBe('CACX7605101P8');
      await page.screenshot({ path: join(artifacts, 'self-invoice-2-uso-not-allowed.png'), fullPage: true });

      // Corrected: D10, colegiaturas (the emisor is a school).
      await uso.selectOption('D10');
      await page.screenshot({ path: join(artifacts, 'self-invoice-3-corrected.png'), fullPage: true });
      await page.getByRole('button', { name: 'Generar factura' }).click();
      await page.getByRole('heading', { name: /Estamos timbrando tu factura|Tu factura está lista/ }).waitFor();
      await page.screenshot({ path: join(artifacts, 'self-invoice-4-stamping.png'), fullPage: true });

      // The worker relays and stamps it; the page refreshes itself until it is ready.
      await w.relay.drainAll();
      await page.getByRole('heading', { name: 'Tu factura está lista' }).waitFor({ timeout: 30_000 });
      const uuid = (await page.locator('strong').first().textContent())!.trim();
      expect(uuid).toMatch(/^[0-9A-F-]{36}$/i);
      await page.screenshot({ path: join(artifacts, 'self-invoice-5-ready.png'), fullPage: true });

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: 'Descargar PDF' }).click(),
      ]);
      const dir = mkdtempSync(join(tmpdir(), 'timbra-self-invoice-'));
      const pdfPath = join(dir, download.suggestedFilename());
      await download.saveAs(pdfPath);
      expect(download.suggestedFilename()).toMatch(new RegExp(`-${uuid}\\.pdf$`, 'i'));
      const text = execFileSync('pdftotext', ['-raw', pdfPath, '-'], { encoding: 'utf8' });
      expect(text).toContain('CACX7605101P8');
      expect(text).toContain(uuid.toUpperCase());
      expect(text).toMatch(/D10/);
      execFileSync('pdftoppm', [
        '-r',
        '60',
        '-png',
        '-f',
        '1',
        '-l',
        '1',
        pdfPath,
        join(artifacts, 'self-invoice-6-pdf'),
      ]);

      // The ticket is the customer's now, and its period's global will not carry it.
      const ticket = await prisma.ticket.findFirstOrThrow({ where: { code } });
      expect(ticket.status).toBe('self_invoiced');
      const invoice = await prisma.invoice.findUniqueOrThrow({ where: { id: ticket.invoiceId! } });
      expect(invoice).toMatchObject({ status: 'stamped', uuid });
      await context.close();
    } finally {
      await w.close();
    }
  });
});
