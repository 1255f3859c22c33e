import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { apiAnswer, makeOrganizationWithCsd, TEST_EMISOR } from '@timbra/test-support';
import {
  eventually,
  startApiProcess,
  startSandboxProcess,
  startWorkerProcess,
  type SandboxProcess,
} from './helpers.ts';

// Test and live as they run: the API and the worker processes, and two PAC sandboxes — the live PAC
// (PAC_PRIMARY_URL) and the test PAC (PAC_TEST_URL). A test key's payment is stamped at the test PAC
// and never reaches the live one; the same sale with a live key is stamped at the live PAC only.

const API_KEY = 'test-mode-home-key-0123456789';
const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const VAULT_KEYS = `k1:${randomBytes(32).toString('base64')}`;
let db: TestDatabase;
let livePac: SandboxProcess;
let testPac: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let worker: ChildProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  [livePac, testPac] = await Promise.all([startSandboxProcess(), startSandboxProcess()]);
  api = await startApiProcess(db.url, API_KEY, { PLATFORM_KEY, VAULT_KEYS });
  worker = startWorkerProcess({ databaseUrl: db.url, sandbox: livePac }, `{t${randomBytes(4).toString('hex')}}`, {
    VAULT_KEYS,
    PAC_TEST_URL: testPac.primary,
    GLOBAL_CLOSE_DELAY_MINUTES: '0',
    GLOBAL_CLOSE_POLL_SECONDS: '1',
  });
});
afterAll(async () => {
  worker.kill('SIGTERM');
  await new Promise((r) => worker.once('exit', r));
  await api.stop();
  await Promise.all([livePac.stop(), testPac.stop()]);
  await db.drop();
});

const call = (key: string, method: 'GET' | 'POST' | 'PATCH', path: string, body?: object) =>
  apiAnswer(api.url, key, method, path, body);
/** The stamp keys (SW's customid) a PAC was sent. */
const customidsAt = async (pac: SandboxProcess) => [
  ...new Set(
    ((await pac.admin('ledger', undefined)) as { received: { customid?: string }[] }).received.map((r) => r.customid),
  ),
];

/** The live organization and its twin's key, made by the first test. */
let made: { live: string; testKey: string } | undefined;

describe('test and live, the processes', () => {
  it("stamps a test key's documents at the test PAC only, a live key's at the live PAC only", async () => {
    const { id: live } = await makeOrganizationWithCsd(api.url, PLATFORM_KEY, {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      lugarExpedicion: '36257',
    });
    const twin = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/test`)).body.id as string;
    const liveKey = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/keys`, { name: 'pos' })).body
      .key as string;
    const testKey = (await call(PLATFORM_KEY, 'POST', `/v1/organizations/${twin}/keys`, { name: 'pos' })).body
      .key as string;
    made = { live, testKey };
    expect(testKey).toMatch(/^tk_test_/);

    // The same sale in both modes, to the SAT's test persona moral.
    const receptor = { ...TEST_EMISOR, codigoPostal: '42501', usoCfdi: 'G03' };
    const pay = async (key: string) =>
      (
        (
          await call(key, 'POST', '/v1/payments', {
            externalId: 'SALE-1',
            amount: '116.00',
            currency: 'MXN',
            occurredAt: new Date(Date.now() - 60_000).toISOString(),
            receptor,
          })
        ).body.invoices as { id: string }[]
      )[0]!.id;
    const testInvoice = await pay(testKey);
    const liveInvoice = await pay(liveKey);
    const invoice = async (key: string, id: string) =>
      (await call(key, 'GET', `/v1/invoices/${id}`)).body as { status: string; stampKey: string; pac: string };
    await eventually(
      async () =>
        (await invoice(testKey, testInvoice)).status === 'stamped' &&
        (await invoice(liveKey, liveInvoice)).status === 'stamped',
      30_000,
    );
    const t = await invoice(testKey, testInvoice);
    const l = await invoice(liveKey, liveInvoice);
    expect(t.stampKey).not.toBe(l.stampKey);
    // Each PAC was sent its mode's document and never the other's.
    expect(await customidsAt(testPac)).toEqual([t.stampKey]);
    expect(await customidsAt(livePac)).toEqual([l.stampKey]);
    expect(t.pac).toBe('test');
    expect(l.pac).toBe('primary');
  });

  it("closes a test twin's period with its live organization's settings, at the test PAC", async () => {
    const { live, testKey } = made!;
    // Set on the live organization: global mode and its own serie, the twin's too.
    const patched = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${live}`, {
      settings: { publicoGeneral: { mode: 'global' }, series: { ingreso: 'G' } },
    });
    expect(patched.status).toBe(200);
    const sold = await call(testKey, 'POST', '/v1/payments', {
      externalId: 'TILL-1',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: new Date(Date.now() - 2 * 86_400_000).toISOString(),
    });
    expect(sold.body.ticket).toMatchObject({ status: 'open' });
    type Period = { invoices: { id: string }[] };
    const globalOf = async () => ((await call(testKey, 'GET', '/v1/globals')).body.data as Period[])[0];
    const statusOf = async (id: string) => (await call(testKey, 'GET', `/v1/invoices/${id}`)).body.status;
    await eventually(async () => {
      const period = await globalOf();
      return period !== undefined && (await statusOf(period.invoices[0]!.id)) === 'stamped';
    }, 30_000);
    const invoice = (await call(testKey, 'GET', `/v1/invoices/${(await globalOf())!.invoices[0]!.id}`)).body as {
      id: string;
      stampKey: string;
    };
    const xml = await fetch(`${api.url}/v1/invoices/${invoice.id}/xml`, {
      headers: { authorization: `Bearer ${testKey}` },
    });
    const text = await xml.text();
    expect(text).toContain('<cfdi:InformacionGlobal');
    expect(text).toMatch(/Serie="G" Folio="1"/);
    expect(await customidsAt(testPac)).toContain(invoice.stampKey);
    expect(await customidsAt(livePac)).not.toContain(invoice.stampKey);
  });
});
