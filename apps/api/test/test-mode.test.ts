import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import got from 'got';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { apiAnswer, makeOrganizationWithCsd } from '@timbra/test-support';
import { startApi, type TestApi } from './helpers.ts';

// Test and live in platform mode: an organization's test twin, made by the platform key, with
// tk_test_ keys whose documents are kept apart from the live ones by row-level security — their own
// folios, their own stamp keys — and sealed with the live organization's CSD and settings. (Where
// they are stamped, the test PAC and never the live one, is the worker's: test-mode-process.test.)

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
const CACX = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ platform: { key: PLATFORM_KEY, vault } });
});
afterAll(async () => {
  await api.close();
});

const call = (key: string, method: 'GET' | 'POST' | 'PATCH', path: string, body?: object) =>
  apiAnswer(api.url, key, method, path, body);
const sale = (externalId: string) => ({
  externalId,
  amount: '116.00',
  currency: 'MXN',
  occurredAt: new Date(Date.now() - 60_000).toISOString(),
});
type Invoice = { id: string; serie: string; folio: number };
const invoiceOf = (body: Record<string, unknown>) => (body.invoices as Invoice[])[0]!;

describe('test and live (platform mode)', () => {
  let live: string;
  let twin: string;
  let liveKey: string;
  let testKey: string;

  it("makes an organization's test twin once, with the live one's facts; a twin has none", async () => {
    live = (await makeOrganizationWithCsd(api.url, PLATFORM_KEY, CACX)).id;
    expect((await call(PLATFORM_KEY, 'GET', `/v1/organizations/${live}`)).body).toMatchObject({
      mode: 'live',
      testOrganization: null,
    });

    const made = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/test`);
    expect(made.status).toBe(201);
    twin = made.body.id as string;
    expect(made.body).toMatchObject({ ...CACX, mode: 'test', liveOrganization: live, csds: [] });
    const again = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/test`);
    expect([again.status, again.body.id]).toEqual([200, twin]);
    expect((await call(PLATFORM_KEY, 'GET', `/v1/organizations/${live}`)).body).toMatchObject({
      testOrganization: twin,
    });
    const ofTwin = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${twin}/test`);
    expect([ofTwin.status, ofTwin.code]).toEqual([409, 'organization_is_test']);
    // Its settings are the live one's, changed there.
    const patched = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${twin}`, { settings: {} });
    expect([patched.status, patched.code]).toEqual([409, 'organization_is_test']);
    expect(JSON.stringify(patched.body.error?.details)).toContain(live);
  });

  it('gives tk_live_ keys to the live organization and tk_test_ keys to its twin', async () => {
    const l = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${live}/keys`, { name: 'pos' });
    const t = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${twin}/keys`, { name: 'pos' });
    liveKey = l.body.key as string;
    testKey = t.body.key as string;
    expect(liveKey).toMatch(/^tk_live_[\w-]{43}$/);
    expect(testKey).toMatch(/^tk_test_[\w-]{43}$/);
    // Lists tell them apart by their prefix: the mode and four characters of the secret.
    expect(l.body.prefix).toBe(liveKey.slice(0, 12));
    expect(t.body.prefix).toBe(testKey.slice(0, 12));
    expect(t.body.organization).toBe(twin);
    // Each key says which it is: same RFC, its own organization and mode; the platform key is neither's.
    const { rfc, nombre } = CACX;
    expect((await call(liveKey, 'GET', '/v1/keys/me')).body).toMatchObject({
      id: l.body.id,
      organization: { id: live, rfc, nombre, mode: 'live' },
    });
    expect((await call(testKey, 'GET', '/v1/keys/me')).body).toMatchObject({
      id: t.body.id,
      organization: { id: twin, rfc, nombre, mode: 'test' },
    });
    expect((await call(PLATFORM_KEY, 'GET', '/v1/keys/me')).status).toBe(401);
  });

  it('keeps test documents apart: their own folios and stamp keys, invisible to live keys', async () => {
    // The same sale in both modes: two documents, each its mode's folio 1.
    const inTest = await call(testKey, 'POST', '/v1/payments', sale('SAME-1'));
    const inLive = await call(liveKey, 'POST', '/v1/payments', sale('SAME-1'));
    expect([inTest.status, inLive.status]).toEqual([201, 201]);
    const t = invoiceOf(inTest.body);
    const l = invoiceOf(inLive.body);
    expect([t.serie, t.folio, l.serie, l.folio]).toEqual(['A', 1, 'A', 1]);
    // Two stamp keys: two queue jobs and two PAC customids, never one document for both.
    const stampKeyOf = async (key: string, id: string) =>
      (await call(key, 'GET', `/v1/invoices/${id}`)).body.stampKey as string;
    const [testStampKey, liveStampKey] = [await stampKeyOf(testKey, t.id), await stampKeyOf(liveKey, l.id)];
    expect(testStampKey).toMatch(/^I-[0-9a-f]{64}$/);
    expect(liveStampKey).toMatch(/^I-[0-9a-f]{64}$/);
    expect(testStampKey).not.toBe(liveStampKey);

    // Sealed as the live organization's emisor, with its CSD (the twin has none of its own).
    const xml = await got(`${api.url}/v1/invoices/${t.id}/xml`, { headers: { authorization: `Bearer ${testKey}` } });
    expect(xml.body).toContain('<cfdi:Emisor Rfc="CACX7605101P8" Nombre="XOCHILT CASAS CHAVEZ"');

    const listed = async (key: string) =>
      ((await call(key, 'GET', '/v1/invoices')).body.data as { id: string }[]).map((i) => i.id);
    expect(await listed(testKey)).toEqual([t.id]);
    expect(await listed(liveKey)).toEqual([l.id]);
    expect((await call(testKey, 'GET', `/v1/invoices/${l.id}`)).status).toBe(404);
    expect((await call(liveKey, 'GET', `/v1/invoices/${t.id}`)).status).toBe(404);
    expect((await call(testKey, 'GET', `/v1/payments`)).body.data).toHaveLength(1);
  });

  it("invoices with the live organization's settings, its new series counted in both", async () => {
    const changed = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${live}`, {
      settings: { series: { ingreso: 'L' } },
    });
    expect(changed.status).toBe(200);
    // The twin's API is rebuilt with them at once.
    const inTest = await call(testKey, 'POST', '/v1/payments', sale('SERIE-L'));
    expect(inTest.status).toBe(201);
    expect(invoiceOf(inTest.body)).toMatchObject({ serie: 'L', folio: 1 });
  });
});
