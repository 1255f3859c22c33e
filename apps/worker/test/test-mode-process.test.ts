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
  });
});
afterAll(async () => {
  worker.kill('SIGTERM');
  await new Promise((r) => worker.once('exit', r));
  await api.stop();
  await Promise.all([livePac.stop(), testPac.stop()]);
  await db.drop();
});

const call = (key: string, method: 'GET' | 'POST', path: string, body?: object) =>
  apiAnswer(api.url, key, method, path, body);
/** The stamp keys (SW's customid) a PAC was sent. */
const customidsAt = async (pac: SandboxProcess) => [
  ...new Set(
    ((await pac.admin('ledger', undefined)) as { received: { customid?: string }[] }).received.map((r) => r.customid),
  ),
];

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
});
