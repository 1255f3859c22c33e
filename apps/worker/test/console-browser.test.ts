/**
 * A merchant's day in the console, in a real browser (Playwright driving Debian's Chromium) against
 * the API's real process, the PAC sandbox's, and the real worker: sign in with a key, find a stamped
 * invoice by serie-folio, open its PDF, resend its email, cancel it; correct an invoice that needs
 * data from the rule shown beside its field; retry a dead letter. Each page passes axe-core (WCAG 2.1
 * AA rules) with 0 violations at desktop and phone sizes, and no page scrolls sideways on a phone.
 * Screenshots in apps/worker/.artifacts/console-*.png.
 */
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import Stripe from 'stripe';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import {
  artifactsDir,
  eventually,
  launchChromium,
  redisFor,
  startApiProcess,
  startSandboxProcess,
  testWorker,
  type SandboxProcess,
} from './helpers.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const API_KEY = 'console-browser-key-0123456789';
const STRIPE_SECRET = 'whsec_console_browser_0123456789';
const prefix = `{tcon${randomBytes(4).toString('hex')}}`;
const CUSTOMER = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  codigoPostal: '36257',
  usoCfdi: 'G03',
};

let db: TestDatabase;
let prisma: PrismaClient;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let browser: Browser;
const redis = redisFor();
const artifacts = artifactsDir();
const auth = { authorization: `Bearer ${API_KEY}` };

beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 5 });
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY, {
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: prefix,
    CONSOLE_SECRET: randomBytes(32).toString('base64url'),
    // Hand-signed Stripe events, nothing fetched from Stripe.
    STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
    STRIPE_API_KEY: 'sk_test_console_browser',
    STRIPE_API_URL: 'http://127.0.0.1:9',
    STRIPE_LINE_ITEMS: 'false',
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

/** axe-core's verdict on the page as it is: the violations, each with its rule and nodes. */
async function axe(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate<{ id: string; nodes: { target: string[] }[] }[]>(
    `axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } }).then((r) => r.violations)`,
  );
  return violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** A page's checks: axe at 0, and on a phone no sideways scroll of the page itself. */
async function checked(page: Page, name: string): Promise<void> {
  expect({ name, violations: await axe(page) }).toEqual({ name, violations: [] });
  const overflow = await page.evaluate<number>(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  );
  expect({ name, overflow }).toEqual({ name, overflow: 0 });
  await page.screenshot({ path: join(artifacts, `console-${name}.png`), fullPage: true });
}

const sale = (externalId: string, receptor?: typeof CUSTOMER) =>
  got
    .post(`${api.url}/v1/payments`, {
      json: {
        externalId,
        amount: '580.00',
        currency: 'MXN',
        occurredAt: new Date().toISOString(),
        ...(receptor ? { receptor } : {}),
      },
      headers: auth,
    })
    .json<{ invoices: { id: string; serieFolio: string }[] }>()
    .then((p) => p.invoices[0]!);

const statusOf = async (id: string) =>
  (await got.get(`${api.url}/v1/invoices/${id}`, { headers: auth }).json<{ status: string }>()).status;

/** A Stripe PaymentIntent whose customer data breaks CFDI40161: the money recorded, the invoice needs data. */
async function needsData(): Promise<string> {
  const id = `pi_console_${Date.now()}`;
  const body = JSON.stringify({
    id: `evt_${id}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    created: Math.floor(Date.now() / 1000) - 60,
    data: {
      object: {
        id,
        object: 'payment_intent',
        amount: 116000,
        amount_received: 116000,
        currency: 'mxn',
        description: 'Colegiatura',
        metadata: {
          rfc: CUSTOMER.rfc,
          razon_social: CUSTOMER.nombre,
          regimen_fiscal: '605',
          codigo_postal: '36257',
          uso_cfdi: 'G03',
        },
      },
    },
  });
  const signature = new Stripe('sk_test_unused').webhooks.generateTestHeaderString({
    payload: body,
    secret: STRIPE_SECRET,
  });
  await got.post(`${api.url}/webhooks/stripe`, {
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
  });
  const invoice = await prisma.invoice.findFirstOrThrow({ where: { payment: { externalId: id } } });
  expect(invoice.status).toBe('needs_data');
  return invoice.id;
}

async function signIn(
  context: BrowserContext,
  viewport: { width: number; height: number },
  name: string,
): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  await page.goto(`${api.url}/console`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await checked(page, `sign-in-${name}`);
  await page.getByLabel('API key').fill('not-the-key-0123456789');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').getByText('That key was not accepted.').waitFor();
  await page.getByLabel('API key').fill(API_KEY);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Invoices' }).waitFor();
  // The header says whose key it is: its name and prefix, and the organization it acts for.
  await page
    .getByRole('banner')
    .getByText(/^\S+ \(console-…\) · \S.+$/)
    .waitFor();
  return page;
}

describe('the console in a browser', () => {
  it('finds, opens, resends and cancels an invoice; corrects one that needs data; retries a dead letter', async () => {
    const w = testWorker(
      { prisma, redis, sandbox },
      { prefix, retry: { attempts: 2, baseDelayMs: 20, maxDelayMs: 40 } },
    );
    try {
      const stamped = await sale('CON-B1', CUSTOMER);
      await w.relay.drainAll();
      await eventually(async () => (await statusOf(stamped.id)) === 'stamped');
      const needing = await needsData();
      // Both PACs down: the worker gives up on it (a dead letter that a retry can fix).
      for (const instance of ['primary', 'backup'])
        await sandbox.admin('faults', { instance, errorRate: 1, errorStatus: 503 });
      const dead = await sale('CON-B2');
      await w.relay.drainAll();
      await eventually(async () => (await statusOf(dead.id)) === 'stamp_failed', 30_000);
      for (const instance of ['primary', 'backup']) await sandbox.admin('faults', { instance, reset: true });

      // axe-core is injected into the page: the pages' own CSP allows only their own scripts.
      const context = await browser.newContext({ bypassCSP: true });
      const page = await signIn(context, { width: 1280, height: 900 }, 'desktop');

      // Search by serie-folio, open it.
      await page.getByLabel('UUID or serie-folio').fill(stamped.serieFolio);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('link', { name: stamped.serieFolio, exact: true }).waitFor();
      expect(await page.locator('tbody tr').count()).toBe(1);
      await checked(page, 'invoices-desktop');
      await page.getByRole('link', { name: stamped.serieFolio, exact: true }).click();
      await page.getByRole('heading', { name: stamped.serieFolio }).waitFor();
      await checked(page, 'invoice-desktop');
      const pdf = await context.request.get(`${api.url}/console/invoices/${stamped.id}/pdf`);
      expect([pdf.status(), pdf.headers()['content-type']]).toEqual([200, 'application/pdf']);

      // Resend its email to another address: the delivery is in its history.
      await page.getByLabel(/^To/).fill('contabilidad@example.com');
      await page.getByRole('button', { name: 'Resend email' }).click();
      await page.getByRole('status').getByText('The email is on its way').waitFor();
      await page.getByRole('cell', { name: 'contabilidad@example.com' }).waitFor();

      // Cancel it (motivo 02): the worker asks the PAC, the SAT accepts, the page says cancelled.
      await page.getByRole('combobox', { name: /^Motivo/ }).selectOption('02');
      await page.getByRole('button', { name: `Cancel ${stamped.serieFolio}` }).click();
      await page.getByRole('status').getByText('Cancellation requested').waitFor();
      await w.relay.drainAll();
      await eventually(async () => (await statusOf(stamped.id)) === 'cancelled', 30_000);
      await page.reload();
      await page.locator('.badge', { hasText: 'cancelled' }).first().waitFor();

      // The needs-data queue: the rule, then the correction form with the field marked beside it.
      await page.getByRole('link', { name: 'Needs data' }).click();
      await page.getByText('CFDI40161').first().waitFor();
      await checked(page, 'needs-data-desktop');
      await page.getByRole('link', { name: /^Correct / }).click();
      const uso = page.getByLabel('Uso CFDI');
      expect(await uso.getAttribute('aria-invalid')).toBe('true');
      await checked(page, 'correct-desktop');
      await page.getByLabel('Customer régimen fiscal').fill('612');
      await page.getByLabel(/^Why/).fill('régimen as registered');
      await page.getByRole('button', { name: /^Correct and issue/ }).click();
      await page.getByRole('status').getByText('Corrected').waitFor();
      await w.relay.drainAll();
      await eventually(async () => (await statusOf(needing)) === 'stamped', 30_000);

      // The dead letter: why it stopped, and a retry that sends the same bytes.
      await page.getByRole('link', { name: 'Dead letters' }).click();
      await page.getByRole('button', { name: `Retry ${dead.serieFolio}` }).waitFor();
      await checked(page, 'dead-letters-desktop');
      await page.getByLabel('Why').fill('the PACs are back');
      await page.getByRole('button', { name: `Retry ${dead.serieFolio}` }).click();
      await page.getByRole('status').getByText('Sent back to the PAC').waitFor();
      await w.relay.drainAll();
      await eventually(async () => (await statusOf(dead.id)) === 'stamped', 30_000);
      await context.close();
    } finally {
      await w.close();
    }
  });

  it('reads on a phone: every page, axe at 0, nothing scrolls sideways', async () => {
    const context = await browser.newContext({ bypassCSP: true, isMobile: true, hasTouch: true });
    const page = await signIn(context, { width: 390, height: 844 }, 'phone');
    await checked(page, 'invoices-phone');
    const first = await prisma.invoice.findFirstOrThrow({ orderBy: { createdAt: 'asc' } });
    await page.goto(`${api.url}/console/invoices/${first.id}`);
    await checked(page, 'invoice-phone');
    await page.goto(`${api.url}/console/needs-data`);
    await checked(page, 'needs-data-phone');
    await page.goto(`${api.url}/console/invoices/${first.id}/correct`);
    await checked(page, 'correct-phone');
    await page.goto(`${api.url}/console/dead-letters`);
    await checked(page, 'dead-letters-phone');
    await context.close();
  });
});
