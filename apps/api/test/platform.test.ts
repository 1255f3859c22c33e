import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes, randomUUID } from 'node:crypto';
import got from 'got';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { X509Certificate } from 'node:crypto';
import { certificateVariant, testCaPem, testCsdFiles, testEfirmaFor, TINY_PNG } from '@timbra/test-support';
import { KEYS, startApi, type TestApi } from './helpers.ts';
import { API_VERSIONS, CURRENT_API_VERSION } from '@timbra/db/keys';

// Platform mode, as main runs it: one API process, every organization over one pool, and the
// platform key making a second organization (its keys, its CSD) beside the home one (EMISOR_*).
// Then each organization's keys reach its own API and rows only.

const PLATFORM_KEY = `tk_platform_${randomBytes(24).toString('base64url')}`;
const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
const CACX = { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612', lugarExpedicion: '36257' };

let api: TestApi;
beforeAll(async () => {
  // The SAT's CAs as CSD_TRUSTED_CAS_FILE gives them: here the tests' CA, which issued the test CSDs.
  api = await startApi({ platform: { key: PLATFORM_KEY, vault, trustedCas: [new X509Certificate(testCaPem())] } });
});
afterAll(async () => {
  await api.close();
});

const call = async (key: string | undefined, method: 'GET' | 'POST' | 'PATCH', path: string, body?: object) => {
  const res = await got(`${api.url}${path}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'idempotency-key': randomUUID() },
    ...(body ? { json: body } : {}),
    throwHttpErrors: false,
    responseType: 'json',
  });
  const answer = res.body as Record<string, unknown> & { error?: { code: string; details?: unknown } };
  return { status: res.statusCode, body: answer, code: answer.error?.code };
};
const files = (rfc: 'EKU9003173C9' | 'CACX7605101P8') => {
  const f = testCsdFiles(rfc);
  return {
    certificate: Buffer.from(f.cer).toString('base64'),
    privateKey: Buffer.from(f.key).toString('base64'),
    password: f.password,
  };
};
const sale = { amount: '116.00', currency: 'MXN', occurredAt: new Date(Date.now() - 60_000).toISOString() };

describe('platform mode: organizations made through /v1/organizations', () => {
  let id: string;
  let orgKey: string;

  it('answers the platform key alone', async () => {
    expect((await call(undefined, 'GET', '/v1/organizations')).status).toBe(401);
    expect((await call(KEYS.admin, 'GET', '/v1/organizations')).code).toBe('unauthorized');
    const list = await call(PLATFORM_KEY, 'GET', '/v1/organizations');
    expect(list.status).toBe(200);
    expect((list.body.data as { rfc: string }[]).map((o) => o.rfc)).toEqual(['EKU9003173C9']);
  });

  it("refuses facts the SAT's rules refuse, then makes the organization once", async () => {
    const moral = await call(PLATFORM_KEY, 'POST', '/v1/organizations', { ...CACX, regimenFiscal: '601' });
    expect([moral.status, moral.code]).toEqual([422, 'fiscal_rules_failed']);
    expect(JSON.stringify(moral.body.error?.details)).toMatch(/regimenFiscal/);
    const shape = await call(PLATFORM_KEY, 'POST', '/v1/organizations', { ...CACX, lugarExpedicion: 'x' });
    expect([shape.status, shape.code]).toEqual([422, 'validation_failed']);

    const made = await call(PLATFORM_KEY, 'POST', '/v1/organizations', CACX);
    expect(made.status).toBe(201);
    id = made.body.id as string;
    expect(made.body).toMatchObject({ ...CACX, csds: [] });
    // A retry is the same organization; other facts for its RFC are a conflict.
    const again = await call(PLATFORM_KEY, 'POST', '/v1/organizations', CACX);
    expect([again.status, again.body.id]).toEqual([200, id]);
    const other = await call(PLATFORM_KEY, 'POST', '/v1/organizations', { ...CACX, nombre: 'OTRA' });
    expect([other.status, other.code]).toEqual([409, 'organization_exists']);
    expect((await call(PLATFORM_KEY, 'GET', `/v1/organizations/${id}`)).body).toMatchObject({ id, rfc: CACX.rfc });
    expect((await call(PLATFORM_KEY, 'GET', `/v1/organizations/${randomUUID()}`)).status).toBe(404);
  });

  it('gives the organization a key, which works once it has a CSD', async () => {
    const key = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/keys`, {
      name: 'pos',
      scopes: ['read', 'write'],
    });
    expect(key.status).toBe(201);
    expect(key.body.apiVersion).toBe(CURRENT_API_VERSION);
    orgKey = key.body.key as string;
    // A key pinned to a version: the version asked for, not ignored; an unknown one refused.
    const pinned = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/keys`, {
      name: 'pinned',
      apiVersion: API_VERSIONS[0],
    });
    expect([pinned.status, pinned.body.apiVersion]).toEqual([201, API_VERSIONS[0]]);
    const unknownVersion = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/keys`, {
      name: 'future',
      apiVersion: '2999-01-01',
    });
    expect([unknownVersion.status, unknownVersion.code]).toEqual([422, 'validation_failed']);
    const early = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'P-1' });
    expect([early.status, early.code]).toEqual([409, 'organization_without_csd']);

    const wrong = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, files('EKU9003173C9'));
    expect([wrong.status, wrong.code]).toEqual([422, 'csd_rejected']);
    // Its own RFC, but issued by a CA the deployment does not trust.
    const untrusted = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, {
      ...files('CACX7605101P8'),
      certificate: certificateVariant(testCsdFiles('CACX7605101P8').cer, { by: 'other-ca' }).toString('base64'),
    });
    expect([untrusted.status, untrusted.code]).toEqual([422, 'csd_rejected']);
    expect(JSON.stringify(untrusted.body.error?.details)).toMatch(/CSD_UNTRUSTED/);
    const stored = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, files('CACX7605101P8'));
    expect(stored.status).toBe(201);
    expect(stored.body.csds).toEqual([expect.objectContaining({ sealing: true, chain: 'verified' })]);
    const twice = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/csds`, files('CACX7605101P8'));
    expect(twice.code).toBe('csd_already_stored');
    // Nothing of the CSD's secrets comes back.
    expect(JSON.stringify(stored.body)).not.toMatch(/password|privateKey|BEGIN/i);
    // Its expiry is watched with every organization's (the TimbraCsdExpiring alerts read this gauge).
    const noCertificado = (stored.body.csds as { noCertificado: string }[])[0]!.noCertificado;
    const metrics = await got(api.metricsUrl).text();
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith('timbra_csd_expires_in_seconds{') && l.includes(`organization="${id}"`));
    expect(line).toContain(`no_certificado="${noCertificado}"`);
    expect(Number(line!.split(' ').pop())).toBeGreaterThan(0);
  });

  it("stores the organization's e.firma for the SAT's record, and never a CSD in its place", async () => {
    const efirma = testEfirmaFor(CACX.rfc, CACX.nombre);
    const body = (f: { cer: Buffer; key: Buffer; password: string }) => ({
      certificate: f.cer.toString('base64'),
      privateKey: f.key.toString('base64'),
      password: f.password,
    });
    const csd = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/efirmas`, files('CACX7605101P8'));
    expect([csd.status, csd.code]).toEqual([422, 'efirma_rejected']);
    expect(JSON.stringify(csd.body.error?.details)).toMatch(/EFIRMA_IS_CSD/);
    const theirs = await call(
      PLATFORM_KEY,
      'POST',
      `/v1/organizations/${id}/efirmas`,
      body(testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE')),
    );
    expect(JSON.stringify(theirs.body.error?.details)).toMatch(/CSD_RFC_MISMATCH/);
    const stored = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/efirmas`, body(efirma));
    expect(stored.status).toBe(201);
    expect(stored.body.efirmas).toEqual([
      expect.objectContaining({ noCertificado: efirma.noCertificado, inUse: true, chain: 'verified' }),
    ]);
    expect(JSON.stringify(stored.body)).not.toContain(efirma.password);
    // Its expiry is watched (the TimbraEfirmaExpiring alert reads this gauge): the seconds to its end.
    const line = (await got(api.metricsUrl).text())
      .split('\n')
      .find((l) => l.startsWith('timbra_efirma_expires_in_seconds{') && l.includes(`organization="${id}"`));
    expect(line).toContain(`no_certificado="${efirma.noCertificado}"`);
    const left = (stored.body.efirmas as { validTo: string }[])[0]!.validTo;
    expect(Math.abs(Number(line!.split(' ').pop()) - (Date.parse(left) - Date.now()) / 1000)).toBeLessThan(60);
    const twice = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/efirmas`, body(efirma));
    expect([twice.status, twice.code]).toEqual([409, 'efirma_already_stored']);
    // A test twin is not a taxpayer of its own: its live organization's e.firma is the one.
    const twin = await call(PLATFORM_KEY, 'POST', `/v1/organizations/${id}/test`);
    const onTwin = await call(
      PLATFORM_KEY,
      'POST',
      `/v1/organizations/${twin.body.id as string}/efirmas`,
      body(efirma),
    );
    expect([onTwin.status, onTwin.code]).toEqual([409, 'organization_is_test']);
  });

  it("keeps each organization's keys to its own API and rows", async () => {
    const theirs = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'SAME-1' });
    expect(theirs.status).toBe(201);
    const ours = await call(KEYS.pos, 'POST', '/v1/payments', { ...sale, externalId: 'SAME-1' });
    expect(ours.status).toBe(201);
    const theirInvoice = (theirs.body.invoices as { id: string }[])[0]!.id;
    const ourInvoice = (ours.body.invoices as { id: string }[])[0]!.id;

    // Sealed by its own emisor, in its own series.
    const xml = await got(`${api.url}/v1/invoices/${theirInvoice}/xml`, {
      headers: { authorization: `Bearer ${orgKey}` },
      throwHttpErrors: false,
    });
    expect(xml.statusCode).toBe(200);
    expect(xml.body).toMatch(/<cfdi:Emisor Rfc="CACX7605101P8"/);
    expect(xml.body).toMatch(/Serie="A" Folio="1"/);

    const listed = async (key: string) =>
      ((await call(key, 'GET', '/v1/invoices')).body.data as { id: string }[]).map((i) => i.id);
    expect(await listed(orgKey)).toEqual([theirInvoice]);
    expect(await listed(KEYS.pos)).toEqual([ourInvoice]);
    expect((await call(orgKey, 'GET', `/v1/invoices/${ourInvoice}`)).status).toBe(404);
    expect((await call(KEYS.pos, 'GET', `/v1/invoices/${theirInvoice}`)).status).toBe(404);
    // The key's scopes are its organization's to enforce: no admin scope, no key list.
    expect((await call(orgKey, 'GET', '/v1/keys')).status).toBe(403);

    // The console signed in with each key: its own organization's invoices, and a 404 for the other's.
    for (const [key, own, other] of [
      [orgKey, theirInvoice, ourInvoice],
      [KEYS.pos, ourInvoice, theirInvoice],
    ] as const) {
      const login = await fetch(`${api.url}/console/login`, {
        method: 'POST',
        body: new URLSearchParams({ key }),
        redirect: 'manual',
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const page = async (path: string) => {
        const res = await fetch(`${api.url}${path}`, { headers: { cookie }, redirect: 'manual' });
        return { status: res.status, html: await res.text() };
      };
      const list = await page('/console/invoices');
      expect([...list.html.matchAll(/href="\/console\/invoices\/([0-9a-f-]{36})"/g)].map((m) => m[1])).toEqual([own]);
      expect((await page(`/console/invoices/${own}`)).status).toBe(200);
      expect((await page(`/console/invoices/${other}`)).status).toBe(404);
    }
  });

  it("takes its own settings over the deployment's: series, concepto, público en general", async () => {
    const patch = (body: object) => call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, body);
    const unknown = await patch({ settings: { series: { ingreso: 'H', otra: 'x' } } });
    expect([unknown.status, unknown.code]).toEqual([422, 'validation_failed']);
    const serie = await patch({ settings: { series: { ingreso: 'S'.repeat(26) } } });
    expect([serie.status, serie.code]).toEqual([422, 'fiscal_rules_failed']);
    expect(JSON.stringify(serie.body.error?.details)).toContain('settings.series');
    expect((await call(orgKey, 'PATCH', `/v1/organizations/${id}`, { settings: {} })).status).toBe(401);

    const set = await patch({
      settings: {
        series: { ingreso: 'H' },
        concepto: { claveProdServ: '90111500', claveUnidad: 'E48', descripcion: 'Servicio de hospedaje' },
        publicoGeneral: { mode: 'global' },
      },
    });
    expect(set.status).toBe(200);
    expect(set.body.settings).toEqual({
      series: { ingreso: 'H', egreso: 'NC', pago: 'P' },
      publicoGeneral: { mode: 'global', periodicidad: '01' },
      concepto: { claveProdServ: '90111500', claveUnidad: 'E48', descripcion: 'Servicio de hospedaje' },
      // The worker's EMAIL_FROM unless it sets its own.
      email: {},
      branding: {},
    });
    // Its sales: in its serie, with its concepto; one without the customer's data is a ticket.
    const receptor = {
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      codigoPostal: '42501',
      regimenFiscal: '601',
      usoCfdi: 'G03',
    };
    const invoiced = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'SET-1', receptor });
    const xml = await got(`${api.url}/v1/invoices/${(invoiced.body.invoices as { id: string }[])[0]!.id}/xml`, {
      headers: { authorization: `Bearer ${orgKey}` },
    }).text();
    expect(xml).toMatch(/Serie="H" Folio="1"/);
    expect(xml).toContain('ClaveProdServ="90111500"');
    expect(xml).toContain('Descripcion="Servicio de hospedaje"');
    const ticket = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'SET-2' });
    expect(ticket.body.ticket).toMatchObject({ status: 'open' });
    // The home organization's settings are the deployment's, unchanged.
    const home = await call(KEYS.pos, 'POST', '/v1/payments', { ...sale, externalId: 'SET-2' });
    expect(home.body.ticket).toBeUndefined();
    expect((home.body.invoices as unknown[]).length).toBe(1);

    // null gives a field back to the deployment.
    const back = await patch({ settings: { series: { ingreso: null }, publicoGeneral: { mode: null } } });
    expect(back.body.settings).toMatchObject({
      series: { ingreso: 'A' },
      publicoGeneral: { mode: 'per-payment' },
      concepto: { descripcion: 'Servicio de hospedaje' },
    });
    const again = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'SET-3' });
    expect((again.body.invoices as unknown[]).length).toBe(1);
  });

  it('gives it its own self-invoicing page, with its logo and colour, for its tickets', async () => {
    await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, { settings: { publicoGeneral: { mode: 'global' } } });
    // Its colour: white text must read on it (WCAG AA), else 422 naming the field.
    const light = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, {
      settings: { branding: { color: '#F0E68C' } },
    });
    expect(light.status).toBe(422);
    expect(JSON.stringify(light.body.error?.details)).toContain('settings.branding.color');
    expect(JSON.stringify(light.body.error?.details)).toContain('4.5:1');
    const bad = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, {
      settings: { branding: { color: 'green' } },
    });
    expect(bad.status).toBe(422);
    const dark = await call(PLATFORM_KEY, 'PATCH', `/v1/organizations/${id}`, {
      settings: { branding: { color: '#0B6E4F' } },
    });
    expect(dark.status).toBe(200);
    expect(dark.body.settings).toMatchObject({ branding: { color: '#0b6e4f' } });
    const logo = TINY_PNG;
    const put = await got.put(`${api.url}/v1/organizations/${id}/logo`, {
      body: logo,
      headers: { authorization: `Bearer ${PLATFORM_KEY}`, 'content-type': 'image/png' },
    });
    expect(JSON.parse(put.body)).toMatchObject({ logo: true });
    const sold = await call(orgKey, 'POST', '/v1/payments', { ...sale, externalId: 'PAGE-1' });
    const ticket = sold.body.ticket as { id: string; code: string };

    const path = `/facturar/${id}`;
    const form = await got.get(`${api.url}${path}`);
    expect(form.body).toContain('XOCHILT CASAS CHAVEZ · Facturación');
    expect(form.body).toContain(`<img src="data:image/png;base64,${logo.toString('base64')}"`);
    expect(form.body).toContain('header { background: #0b6e4f;');
    expect(form.body).toContain('button { font: inherit; font-weight: 600; background: #0b6e4f;');
    expect(form.body).not.toContain('#12355b'); // the deployment's
    expect(form.body).toContain(`action="${path}"`);
    const cookie = /timbra_csrf=([^;]+)/.exec(String(form.headers['set-cookie']))![1]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1]!;
    const fields = {
      _csrf: csrf,
      codigo: ticket.code,
      total: '116.00',
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      codigoPostal: '42501',
      regimenFiscal: '601',
      usoCfdi: 'G03',
    };
    const post = (at: string) =>
      got.post(`${api.url}${at}`, {
        form: fields,
        headers: { cookie: `timbra_csrf=${cookie}` },
        throwHttpErrors: false,
        followRedirect: false,
      });
    // The home organization's page knows nothing of it (and is off: per-payment mode).
    expect((await post('/facturar')).statusCode).toBe(404);
    const done = await post(path);
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toMatch(new RegExp(`^${path}/ticket/[\\w-]+$`));
    expect((await got.get(`${api.url}${done.headers.location}`)).body).toContain('Estamos timbrando tu factura');
    expect((await call(orgKey, 'GET', `/v1/tickets/${ticket.id}`)).body).toMatchObject({ status: 'self_invoiced' });
    // An organization that does not exist has no page.
    expect((await got.get(`${api.url}/facturar/${randomUUID()}`, { throwHttpErrors: false })).statusCode).toBe(404);
  });
});
