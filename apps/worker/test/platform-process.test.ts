import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import got from 'got';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { testCsdFiles } from '@timbra/test-support';
import {
  eventually,
  startApiProcess,
  startSandboxProcess,
  startWorkerProcess,
  type SandboxProcess,
} from './helpers.ts';

// Platform mode as it runs: the API and the worker as the processes they are in production, one of
// each for every organization. The platform key makes an organization, gives it a CSD and a key;
// that key's payment is stamped by the one worker, sealed by the organization's own emisor.

const API_KEY = 'platform-home-key-0123456789';
const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const VAULT_KEYS = `k1:${randomBytes(32).toString('base64')}`;
let db: TestDatabase;
let sandbox: SandboxProcess;
let api: { url: string; stop: () => Promise<void> };
let worker: ChildProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  sandbox = await startSandboxProcess();
  api = await startApiProcess(db.url, API_KEY, { PLATFORM_KEY, VAULT_KEYS });
  worker = startWorkerProcess({ databaseUrl: db.url, sandbox }, `{p${randomBytes(4).toString('hex')}}`, { VAULT_KEYS });
});
afterAll(async () => {
  worker.kill('SIGTERM');
  await new Promise((r) => worker.once('exit', r));
  await api.stop();
  await sandbox.stop();
  await db.drop();
});

const call = async (key: string, method: 'GET' | 'POST', path: string, body?: object) => {
  const res = await got(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() },
    ...(body ? { json: body } : {}),
    throwHttpErrors: false,
    responseType: 'json',
  });
  return { status: res.statusCode, body: res.body as Record<string, unknown> };
};

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

    const sale = { amount: '116.00', currency: 'MXN', occurredAt: new Date(Date.now() - 60_000).toISOString() };
    const invoiceOf = async (k: string) =>
      ((await call(k, 'POST', '/v1/payments', { ...sale, externalId: 'SALE-1' })).body.invoices as { id: string }[])[0]!
        .id;
    const theirs = await invoiceOf(key);
    const ours = await invoiceOf(API_KEY);
    const statusOf = async (k: string, invoice: string) =>
      (await call(k, 'GET', `/v1/invoices/${invoice}`)).body.status as string;
    await eventually(
      async () => (await statusOf(key, theirs)) === 'stamped' && (await statusOf(API_KEY, ours)) === 'stamped',
      30_000,
    );
    const xml = await got(`${api.url}/v1/invoices/${theirs}/xml`, { headers: { authorization: `Bearer ${key}` } });
    expect(xml.body).toContain('<cfdi:Emisor Rfc="CACX7605101P8"');
    expect(xml.body).toContain('tfd:TimbreFiscalDigital');
  });
});
