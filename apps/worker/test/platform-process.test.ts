import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import got from 'got';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMailbox, testCsdFiles, TINY_PNG, type Mailbox } from '@timbra/test-support';
import {
  eventually,
  freePorts,
  startApiProcess,
  startSandboxProcess,
  startWorkerProcess,
  type SandboxProcess,
} from './helpers.ts';

// Platform mode as it runs: the API and the worker as the processes they are in production, one of
// each for every organization. The platform key makes an organization, gives it a CSD and a key;
// that key's payment is stamped by the one worker, sealed by the organization's own emisor, and the
// worker's background duties (the facturas globales' close timer, corrections) are the
// organization's too. Público en general is in global mode: a sale without the customer's data is
// a ticket.

const API_KEY = 'platform-home-key-0123456789';
const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const VAULT_KEYS = `k1:${randomBytes(32).toString('base64')}`;
let db: TestDatabase;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let worker: ChildProcess;
let metricsUrl: string;
let mailbox: Mailbox;

beforeAll(async () => {
  db = await createTestDatabase();
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY, { PLATFORM_KEY, VAULT_KEYS, PUBLICO_GENERAL_MODE: 'global' });
  const [port] = await freePorts(1);
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  mailbox = await startMailbox();
  worker = startWorkerProcess({ databaseUrl: db.url, sandbox }, `{p${randomBytes(4).toString('hex')}}`, {
    VAULT_KEYS,
    SMTP_URL: mailbox.url,
    EMAIL_FROM: 'Facturación <facturas@timbra.test>',
    WORKER_HTTP_PORT: String(port),
    STAMP_ATTEMPTS: '2',
    GLOBAL_CLOSE_DELAY_MINUTES: '0',
    GLOBAL_CLOSE_POLL_SECONDS: '1',
    CORRECTION_POLL_MS: '200',
  });
});
afterAll(async () => {
  worker.kill('SIGTERM');
  await new Promise((r) => worker.once('exit', r));
  await api.stop();
  await mailbox.close();
  await sandbox.stop();
  await db.drop();
});

/** The SAT's test persona moral as the customer (the sandbox's registry knows its name). */
const CUSTOMER = {
  rfc: 'EKU9003173C9',
  nombre: 'ESCUELA KEMPER URGATE',
  codigoPostal: '42501',
  regimenFiscal: '601',
  usoCfdi: 'G03',
};
/** The organization the first test makes, and its key. */
let other: { id: string; key: string } | undefined;

/** The images a PDF embeds, as poppler's pdfimages lists them: `<width>x<height>` each. */
/** How many pixels of the PDF's first page (36 dpi, poppler's pdftoppm) are near `#rrggbb`. */
function pixelsOfColour(pdf: Buffer, hex: string): number {
  const file = join(mkdtempSync(join(tmpdir(), 'timbra-pdf-')), 'x.pdf');
  writeFileSync(file, pdf);
  // PPM: "P6\n<width> <height>\n255\n" and then the RGB bytes.
  const ppm = execFileSync('pdftoppm', ['-r', '36', '-f', '1', '-l', '1', file]);
  const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.toString('latin1', 0, 40))!;
  const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = header[0].length; i + 2 < ppm.length; i += 3)
    if (want.every((v, k) => Math.abs(ppm[i + k]! - v) < 30)) n++;
  return n;
}

function imagesOf(pdf: Buffer): string[] {
  const file = join(mkdtempSync(join(tmpdir(), 'timbra-pdf-')), 'x.pdf');
  writeFileSync(file, pdf);
  return execFileSync('pdfimages', ['-list', file], { encoding: 'utf8' })
    .split('\n')
    .slice(2)
    .filter((line) => line.trim())
    .map((line) => {
      const [, , , width, height] = line.trim().split(/\s+/);
      return `${width}x${height}`;
    });
}

const call = async (key: string, method: 'GET' | 'POST' | 'PATCH', path: string, body?: object) => {
  const res = await got(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() },
    ...(body ? { json: body } : {}),
    throwHttpErrors: false,
    responseType: 'json',
  });
  return { status: res.statusCode, body: res.body as Record<string, unknown> };
};
const statusOf = async (k: string, invoice: string) =>
  (await call(k, 'GET', `/v1/invoices/${invoice}`)).body.status as string;

describe('platform mode, the processes', () => {
  it("stamps another organization's payment with its own CSD, beside the home organization's", async () => {
    const org = await call(PLATFORM_KEY, 'POST', '/v1/organizations', {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      lugarExpedicion: '36257',
    });
    expect(org.status).toBe(201);
    const id = org.body.id as string;
    const files = testCsdFiles('CACX7605101P8');
    const csd = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, {
      certificate: Buffer.from(files.cer).toString('base64'),
      privateKey: Buffer.from(files.key).toString('base64'),
      password: files.password,
    });
    expect(csd.status).toBe(201);
    const key = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/keys`, { name: 'pos' })).body.key as string;

    other = { id, key };

    const sale = { amount: '116.00', currency: 'MXN', occurredAt: new Date(Date.now() - 60_000).toISOString() };
    // Each organization's customer is the other's emisor (the SAT's two test taxpayers).
    const invoiceOf = async (k: string, receptor: object) =>
      (
        (await call(k, 'POST', '/v1/payments', { ...sale, externalId: 'SALE-1', receptor })).body.invoices as {
          id: string;
        }[]
      )[0]!.id;
    const theirs = await invoiceOf(key, CUSTOMER);
    const ours = await invoiceOf(API_KEY, {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      codigoPostal: '36257',
      regimenFiscal: '612',
      usoCfdi: 'G03',
    });
    await eventually(
      async () => (await statusOf(key, theirs)) === 'stamped' && (await statusOf(API_KEY, ours)) === 'stamped',
      30_000,
    );
    const xml = await got(`${api.url}/v1/invoices/${theirs}/xml`, { headers: { authorization: `Bearer ${key}` } });
    expect(xml.body).toContain('<cfdi:Emisor Rfc="CACX7605101P8"');
    expect(xml.body).toContain('tfd:TimbreFiscalDigital');
  });

  it("closes the organization's period into its own factura global, and says how late each organization's is", async () => {
    const { key, id } = other!;
    // Its own serie: the worker's close timer issues its global there.
    expect(
      (await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, { settings: { series: { ingreso: 'G' } } })).status,
    ).toBe(200);
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString();
    for (const [externalId, amount] of [
      ['TILL-1', '116.00'],
      ['TILL-2', '58.00'],
    ])
      expect(
        (await call(key, 'POST', '/v1/payments', { externalId, amount, currency: 'MXN', occurredAt: twoDaysAgo })).body
          .ticket,
      ).toMatchObject({ status: 'open' });

    type Period = { tickets: number; total: string; issuedBy: string; invoices: { id: string }[] };
    const globalsOf = async (k: string) => (await call(k, 'GET', '/v1/globals')).body.data as Period[];
    await eventually(async () => {
      const [period] = await globalsOf(key);
      return period !== undefined && (await statusOf(key, period.invoices[0]!.id)) === 'stamped';
    }, 30_000);
    const [period] = await globalsOf(key);
    expect(period).toMatchObject({ tickets: 2, total: '174.00', issuedBy: 'schedule' });
    const xml = await got(`${api.url}/v1/invoices/${period!.invoices[0]!.id}/xml`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(xml.body).toContain('<cfdi:Emisor Rfc="CACX7605101P8"');
    expect(xml.body).toContain('<cfdi:InformacionGlobal');
    expect(xml.body).toMatch(/Serie="G" Folio="1"/);
    expect(await globalsOf(API_KEY)).toEqual([]);

    // One series an organization: the other's is 0 once its global is stamped, the home one's too.
    const lags = async () =>
      [
        ...(await got(metricsUrl).text()).matchAll(
          /^timbra_global_period_lag_seconds\{organization="([^"]+)"\} (\S+)$/gm,
        ),
      ]
        .map((m) => `${m[1]}=${m[2]}`)
        .sort();
    await eventually(async () => (await lags()).includes(`${other!.id}=0`), 10_000);
    expect((await lags()).length).toBe(2);
  });

  it("applies the organization's correction: a name the PAC refused, corrected, stamped as version 2", async () => {
    const { key } = other!;
    const wrong = { ...CUSTOMER, nombre: 'ESCUELA KEMPER' };
    const paid = await call(key, 'POST', '/v1/payments', {
      externalId: 'SALE-NAME',
      amount: '232.00',
      currency: 'MXN',
      occurredAt: new Date(Date.now() - 60_000).toISOString(),
      receptor: wrong,
    });
    const id = (paid.body.invoices as { id: string }[])[0]!.id;
    await eventually(async () => (await statusOf(key, id)) === 'stamp_failed', 30_000);
    const patched = await call(key, 'PATCH', `/v1/invoices/${id}`, {
      receptor: { nombre: CUSTOMER.nombre },
      reason: 'name as registered at the SAT',
    });
    expect(patched.status).toBe(202);
    await eventually(async () => (await statusOf(key, id)) === 'stamped', 30_000);
    const invoice = (await call(key, 'GET', `/v1/invoices/${id}`)).body;
    expect(invoice).toMatchObject({ version: 2 });
    const xml = await got(`${api.url}/v1/invoices/${id}/xml`, { headers: { authorization: `Bearer ${key}` } });
    expect(xml.body).toContain(`Nombre="${CUSTOMER.nombre}"`);
    expect(xml.body).toContain('<cfdi:Emisor Rfc="CACX7605101P8"');
  });

  it("prints the organization's logo and colour on its PDFs and emails its customers from its own address", async () => {
    const { key, id } = other!;
    // A 3×2 PNG, as the platform uploads it.
    const logo = TINY_PNG;
    const put = await got.put(`${api.url}/v1/organizations/${id}/logo`, {
      body: logo,
      headers: { authorization: `Bearer ${PLATFORM_KEY}`, 'content-type': 'image/png' },
    });
    expect(JSON.parse(put.body)).toMatchObject({ id, logo: true });
    const from = 'Tienda Xochilt <facturas@xochilt.test>';
    const color = '#0b6e4f';
    const patched = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, {
      settings: { email: { from }, branding: { color } },
    });
    expect(patched.body.settings).toMatchObject({ email: { from }, branding: { color } });

    const sale = (k: string, externalId: string, email: string) =>
      call(k, 'POST', '/v1/payments', {
        externalId,
        amount: '58.00',
        currency: 'MXN',
        occurredAt: new Date(Date.now() - 60_000).toISOString(),
        receptor: CUSTOMER,
        email,
      });
    const theirs = ((await sale(key, 'MAIL-1', 'cliente@xochilt.test')).body.invoices as { id: string }[])[0]!.id;
    const ours = ((await sale(API_KEY, 'MAIL-1', 'cliente@kemper.test')).body.invoices as { id: string }[])[0]!.id;
    await eventually(
      async () => (await statusOf(key, theirs)) === 'stamped' && (await statusOf(API_KEY, ours)) === 'stamped',
      30_000,
    );
    const pdfOf = async (k: string, invoice: string) =>
      (await got(`${api.url}/v1/invoices/${invoice}/pdf`, { headers: { authorization: `Bearer ${k}` } })).rawBody;
    // Its PDF embeds its logo; the home organization's (no INVOICE_LOGO_FILE here) does not.
    expect(imagesOf(await pdfOf(key, theirs))).toContain('3x2');
    expect(imagesOf(await pdfOf(API_KEY, ours))).not.toContain('3x2');
    // Its colour on its name and headings; none on the home organization's (no INVOICE_COLOR here).
    expect(pixelsOfColour(await pdfOf(key, theirs), color)).toBeGreaterThan(100);
    expect(pixelsOfColour(await pdfOf(API_KEY, ours), color)).toBe(0);

    await eventually(async () => {
      const to = mailbox.received.flatMap((m) => m.to);
      return Promise.resolve(to.includes('cliente@xochilt.test') && to.includes('cliente@kemper.test'));
    }, 30_000);
    const mailTo = (address: string) => mailbox.received.find((m) => m.to.includes(address))!;
    expect(mailTo('cliente@xochilt.test').parsed.from?.value).toEqual([
      { name: 'Tienda Xochilt', address: 'facturas@xochilt.test' },
    ]);
    expect(mailTo('cliente@kemper.test').parsed.from?.value).toEqual([
      { name: 'Facturación', address: 'facturas@timbra.test' },
    ]);
    const attached = mailTo('cliente@xochilt.test').parsed.attachments.find((a) => a.contentType === 'application/pdf');
    expect(imagesOf(attached!.content)).toContain('3x2');
    expect(pixelsOfColour(attached!.content, color)).toBeGreaterThan(100);
    // The email opens with its name on a band of its colour; the home organization's has none.
    expect(mailTo('cliente@xochilt.test').parsed.html).toContain(`<div style="background:${color};color:#ffffff;`);
    expect(mailTo('cliente@kemper.test').parsed.html).not.toContain('background:');
  });
});
