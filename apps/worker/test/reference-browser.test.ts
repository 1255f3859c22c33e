/**
 * The API reference as an integrator reads it, in a real browser (Playwright driving Debian's
 * Chromium) against the API's real process: /docs renders every operation and webhook of the spec
 * with Swagger UI, loads nothing from another site and breaks no CSP rule; an error's docUrl opens
 * /docs/errors at its code's row. Screenshots at desktop and phone sizes in apps/worker/.artifacts/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import type { Browser, Page } from 'playwright-core';
import { parse } from 'yaml';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { artifactsDir, launchChromium, startApiProcess } from './helpers.ts';

const artifacts = artifactsDir();
const API_KEY = 'reference-browser-key-0123456789';
const spec = parse(readFileSync(new URL('../../api/openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
  webhooks: Record<string, unknown>;
};

let db: TestDatabase;
let api: { url: string; stop: () => Promise<void> };
let browser: Browser;
beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApiProcess(db.url, API_KEY);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await db?.drop();
});

/** A page that records what a reader would not see: script errors, CSP refusals, other sites. */
async function watchedPage(viewport: { width: number; height: number }) {
  const page = await browser.newPage({ viewport });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`script: ${e.message}`));
  page.on('request', (r) => {
    if (!r.url().startsWith(api.url) && !r.url().startsWith('data:')) problems.push(`elsewhere: ${r.url()}`);
  });
  return { page, problems };
}

const operations = Object.values(spec.paths).flatMap((ops) =>
  Object.values(ops).filter((op) => typeof op === 'object' && op !== null && 'operationId' in op),
);

async function rendered(page: Page) {
  await page.goto(`${api.url}/docs`);
  await page.waitForSelector('.opblock', { timeout: 30_000 });
  return page;
}

describe('the API reference in a browser', () => {
  it('renders every operation and webhook of the spec from local files, with nothing refused', async () => {
    const { page, problems } = await watchedPage({ width: 1280, height: 900 });
    await rendered(page);
    const shownOps = await page.locator('.opblock').count();
    // Each path operation, and each webhook (Swagger UI shows the `webhooks:` section too).
    expect(shownOps).toBe(operations.length + Object.keys(spec.webhooks).length);
    await expect(page.locator('.info .title').innerText()).resolves.toContain('Timbra');
    // Opening an operation shows its request body and answers.
    const create = page.locator('#operations-payments-createPayment');
    await create.locator('.opblock-summary').click();
    await create.locator('.opblock-body').waitFor();
    await expect(create.locator('.opblock-body').innerText()).resolves.toContain('Idempotency-Key');
    await page.screenshot({ path: join(artifacts, 'reference-desktop.png') });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('reads on a phone without sideways scrolling of the page', async () => {
    const { page, problems } = await watchedPage({ width: 390, height: 844 });
    await rendered(page);
    // Run in the page (a string: this package's types know no DOM).
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(artifacts, 'reference-phone.png') });
    expect(problems).toEqual([]);
    await page.close();
  });

  it("opens an error's docUrl at its code's row", async () => {
    const refused = await got.post(`${api.url}/v1/payments`, {
      json: { externalId: 'X' },
      headers: { authorization: `Bearer ${API_KEY}` },
      throwHttpErrors: false,
    });
    const { error } = JSON.parse(refused.body) as { error: { code: string; docUrl: string } };
    expect(error.code).toBe('validation_failed');
    const { page, problems } = await watchedPage({ width: 1280, height: 900 });
    await page.goto(error.docUrl);
    const row = page.locator('tr:target');
    await expect(row.innerText()).resolves.toMatch(/^validation_failed\s+422/);
    await expect(row.isVisible()).resolves.toBe(true);
    await page.screenshot({ path: join(artifacts, 'reference-error.png') });
    expect(problems).toEqual([]);
    await page.close();
  });
});
