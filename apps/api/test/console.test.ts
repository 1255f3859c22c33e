/**
 * The merchant console over HTTP against the running API (the browser's view is in
 * apps/worker/test/console-browser.test.ts): sign-in with a key and its sealed cookie, search by each
 * filter, an invoice's page and documents, and every change refused unless it comes from the
 * console's own form, by a key with the scope, once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTimbra } from '@timbra/client';
import { deadLetterOutboxRow } from '@timbra/db/outbox';
import { bootstrap } from '../src/bootstrap.ts';
import { EMISOR, KEYS, stampAsWorker, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
const READ_ONLY = 'console-read-only-key-0123456789';
beforeAll(async () => {
  api = await startApi({ providers: true });
  await bootstrap(api.prisma, {
    organizationId: api.payments.organizationId,
    series: [],
    // The configured keys are synced as a whole: startApi's three, and a key that can only read.
    apiKeys: [
      { name: 'pos', key: KEYS.pos, scopes: ['read', 'write', 'cancel'] },
      { name: 'other', key: KEYS.other, scopes: ['read', 'write', 'cancel'] },
      { name: 'ops', key: KEYS.admin, scopes: ['read', 'write', 'cancel', 'admin'] },
      { name: 'viewer', key: READ_ONLY, scopes: ['read'] },
    ],
  });
});
afterAll(() => api.close());

const timbra = () => createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
const CUSTOMER = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  codigoPostal: '36257',
  usoCfdi: 'G03',
};

/** A browser of the console: its cookie kept, redirects not followed. */
function browser() {
  let cookie = '';
  const go = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${api.url}${path}`, {
      ...init,
      redirect: 'manual',
      headers: { ...(cookie ? { cookie } : {}), ...(init.headers as Record<string, string>) },
    });
    const set = res.headers.get('set-cookie');
    if (set) cookie = set.split(';')[0]!;
    return { status: res.status, location: res.headers.get('location'), html: await res.text(), res, set };
  };
  return {
    get: (path: string) => go(path),
    post: (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
      go(path, {
        method: 'POST',
        body: new URLSearchParams(form).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      }),
    get cookie() {
      return cookie;
    },
    set cookie(value: string) {
      cookie = value;
    },
  };
}

/** The hidden fields of the form posting to `action` on a page. */
function hiddenOf(html: string, action: string): Record<string, string> {
  const form = new RegExp(`<form[^>]*action="${action.replace(/[/.]/g, '\\$&')}"[\\s\\S]*?</form>`).exec(html);
  if (!form) throw new Error(`no form to ${action}`);
  return Object.fromEntries(
    [...form[0].matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]),
  );
}

async function signedIn(key = KEYS.pos) {
  const b = browser();
  const login = await b.post('/console/login', { key });
  expect(login).toMatchObject({ status: 303, location: '/console/invoices' });
  return b;
}

const sale = async (externalId: string, receptor?: typeof CUSTOMER) => {
  const made = await timbra().POST('/v1/payments', {
    body: {
      externalId,
      amount: '116.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
      ...(receptor ? { receptor } : {}),
    },
  });
  return made.data!.invoices[0]!;
};

describe('the console', () => {
  it('signs in with a key into a sealed, HttpOnly, same-site cookie; refuses bad keys and forged cookies', async () => {
    const anonymous = browser();
    expect(await anonymous.get('/console/invoices')).toMatchObject({ status: 303, location: '/console/login' });
    const bad = await anonymous.post('/console/login', { key: 'not-a-key-0123456789abcdef' });
    expect(bad.status).toBe(401);
    expect(bad.html).toContain('That key was not accepted.');
    expect(bad.set).toBeNull();

    const b = browser();
    const login = await b.post('/console/login', { key: KEYS.pos });
    expect(login.status).toBe(303);
    expect(login.set).toMatch(
      /^timbra_console=[\w-]+; Max-Age=28800; Path=\/console; Expires=.*; HttpOnly; SameSite=Strict$/,
    );
    // The key is sealed: not in the cookie in any readable form.
    const value = b.cookie.split('=')[1]!;
    expect(Buffer.from(value, 'base64url').toString('latin1')).not.toContain(KEYS.pos.slice(0, 8));
    expect(value).not.toContain(KEYS.pos.slice(0, 8));
    const page = await b.get('/console/invoices');
    expect(page.status).toBe(200);
    expect(page.html).toContain('<h1>Invoices</h1>');
    // The header says whose session it is: the key's name, its organization, its prefix.
    expect(page.html).toContain(`<span>pos (${KEYS.pos.slice(0, 8)}…) · ${EMISOR.nombre}</span>`);

    // A cookie changed by one character, or sealed by another deployment, is no session. (The last
    // character but one, always to another letter: the last may hold only padding bits.)
    const forged = browser();
    const changed = value.at(-2) === 'A' ? 'B' : 'A';
    forged.cookie = `timbra_console=${value.slice(0, -2)}${changed}${value.slice(-1)}`;
    expect(forged.cookie).not.toBe(b.cookie);
    expect(await forged.get('/console/invoices')).toMatchObject({ status: 303, location: '/console/login' });

    // Signing out needs the form's token, then forgets the session.
    expect((await b.post('/console/logout', { token: 'x' })).status).toBe(403);
    const out = await b.post('/console/logout', hiddenOf(page.html, '/console/logout'));
    expect(out).toMatchObject({ status: 303, location: '/console/login' });
    expect(out.set).toMatch(/^timbra_console=;/);
  });

  it('searches by UUID, serie-folio, customer RFC, status and Mexico City dates', async () => {
    const a = await sale('CON-S1', CUSTOMER);
    const b = await sale('CON-S2');
    const c = await sale('CON-S3', { ...CUSTOMER, rfc: 'MISC491214B86', nombre: 'CECILIA MIRANDA SANCHEZ' });
    await stampAsWorker(api.prisma, c.id, 'ABCDEF01-2345-4678-89AB-CDEF01234567');
    const console = await signedIn();
    const found = async (query: string) => {
      const page = await console.get(`/console/invoices?${query}`);
      expect(page.status).toBe(200);
      return [...page.html.matchAll(/<a href="\/console\/invoices\/([0-9a-f-]{36})">/g)].map((m) => m[1]);
    };
    expect(await found(`q=${a.serieFolio}`)).toEqual([a.id]);
    expect(await found('q=abcdef01-2345-4678-89ab-cdef01234567')).toEqual([c.id]);
    expect(await found('rfc=cacx7605101p8')).toEqual([a.id]);
    expect(await found('status=stamped')).toEqual([c.id]);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Mexico_City' }).format(new Date());
    expect(await found(`from=${today}&to=${today}`)).toEqual(expect.arrayContaining([a.id, b.id, c.id]));
    expect(await found(`to=2020-01-01`)).toEqual([]);
    // An invoice's own id opens its page.
    expect(await console.get(`/console/invoices?q=${b.id}`)).toMatchObject({
      status: 303,
      location: `/console/invoices/${b.id}`,
    });
    // The customer's name is shown; público en general says so.
    const all = await console.get('/console/invoices');
    expect(all.html).toContain('CECILIA MIRANDA SANCHEZ');
    expect(all.html).toContain('Público en general');
    // A malformed filter is the API's 422, shown with its field.
    const wrong = await console.get('/console/invoices?rfc=nope');
    expect(wrong.status).toBe(422);
    expect(wrong.html).toContain('<code>rfc</code>');
  });

  it("shows an invoice's page and documents, and cancels once, from its own form, with the cancel scope", async () => {
    const inv = await sale('CON-C1', CUSTOMER);
    await stampAsWorker(api.prisma, inv.id, '11111111-2222-4333-8444-555555555555');
    const console = await signedIn();
    const page = await console.get(`/console/invoices/${inv.id}`);
    expect(page.status).toBe(200);
    expect(page.html).toContain('11111111-2222-4333-8444-555555555555');
    const pdf = await console.get(`/console/invoices/${inv.id}/pdf`);
    expect(pdf.res.headers.get('content-type')).toBe('application/pdf');
    expect(pdf.html.startsWith('%PDF')).toBe(true);
    const xml = await console.get(`/console/invoices/${inv.id}/xml`);
    expect(xml.res.headers.get('content-disposition')).toContain('11111111-2222-4333-8444-555555555555.xml');

    const form = hiddenOf(page.html, `/console/invoices/${inv.id}/cancel`);
    // Another site's form (or a forged token) changes nothing.
    expect(
      (
        await console.post(
          `/console/invoices/${inv.id}/cancel`,
          { ...form, motivo: '02' },
          { 'sec-fetch-site': 'cross-site' },
        )
      ).status,
    ).toBe(403);
    expect(
      (await console.post(`/console/invoices/${inv.id}/cancel`, { ...form, token: 'forged', motivo: '02' })).status,
    ).toBe(403);
    // A key without the cancel scope is refused by the API, and the page says why.
    const viewer = await signedIn(READ_ONLY);
    const viewerForm = hiddenOf(
      (await viewer.get(`/console/invoices/${inv.id}`)).html,
      `/console/invoices/${inv.id}/cancel`,
    );
    const denied = await viewer.post(`/console/invoices/${inv.id}/cancel`, { ...viewerForm, motivo: '02' });
    expect(denied.status).toBe(403);
    expect(denied.html).toContain('lacks the cancel scope');
    expect(await api.prisma.cancelRequest.count({ where: { invoiceId: inv.id } })).toBe(0);

    // Sent twice (a double click): one cancellation.
    const first = await console.post(`/console/invoices/${inv.id}/cancel`, { ...form, motivo: '02' });
    const second = await console.post(`/console/invoices/${inv.id}/cancel`, { ...form, motivo: '02' });
    expect(first).toMatchObject({ status: 303, location: `/console/invoices/${inv.id}?done=cancel` });
    expect(second.status).toBe(303);
    expect(await api.prisma.cancelRequest.count({ where: { invoiceId: inv.id } })).toBe(1);
    const after = await console.get(`/console/invoices/${inv.id}?done=cancel`);
    expect(after.html).toContain('Cancellation requested');
    expect(after.html).toContain('cancel requested');
  });

  it('lists what needs data with the rule it breaks, and corrects it from the form', async () => {
    const made = await api.providers.stripePayment({
      amount: 116000,
      metadata: {
        rfc: CUSTOMER.rfc,
        razon_social: CUSTOMER.nombre,
        regimen_fiscal: '605',
        codigo_postal: '36257',
        uso_cfdi: 'G03',
      },
    });
    const invoice = await api.prisma.invoice.findFirstOrThrow({
      where: { payment: { externalId: made.paymentIntent.id } },
    });
    expect(invoice.status).toBe('needs_data');
    const console = await signedIn();
    const queue = await console.get('/console/needs-data');
    expect(queue.html).toContain(`${invoice.serie}-${invoice.folio}`);
    expect(queue.html).toContain('CFDI40161');
    const page = await console.get(`/console/invoices/${invoice.id}/correct`);
    // The field at the rule's XPath is marked, the rule beside it; the form starts from what the payment has.
    expect(page.html).toMatch(
      /id="usoCfdi" name="usoCfdi" value="G03" aria-invalid="true" aria-describedby="usoCfdi-problem"/,
    );
    expect(page.html).toMatch(/<ul id="usoCfdi-problem" class="problem"><li><strong>CFDI40161<\/strong>/);
    expect(page.html).toContain('id="regimenFiscal" name="regimenFiscal" value="605">');
    const form = hiddenOf(page.html, `/console/invoices/${invoice.id}/correct`);
    const base = { ...form, rfc: CUSTOMER.rfc, nombre: CUSTOMER.nombre, codigoPostal: '36257', usoCfdi: 'G03' };
    // Still wrong: the form again with the rule, nothing written.
    const still = await console.post(`/console/invoices/${invoice.id}/correct`, {
      ...base,
      regimenFiscal: '605',
      usoCfdi: 'G01',
      reason: 'try',
    });
    expect(still.status).toBe(422);
    expect(still.html).toContain('CFDI40161');
    expect(await api.prisma.invoiceCorrection.count({ where: { invoiceId: invoice.id } })).toBe(0);
    const fixed = await console.post(`/console/invoices/${invoice.id}/correct`, {
      ...base,
      once: randomUUID(),
      regimenFiscal: '612',
      reason: 'régimen as registered',
    });
    expect(fixed).toMatchObject({ status: 303, location: `/console/invoices/${invoice.id}?done=correct` });
    expect((await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoice.id } })).status).toBe('pending');
    const correction = await api.prisma.invoiceCorrection.findFirstOrThrow({ where: { invoiceId: invoice.id } });
    expect(correction.changes).toEqual({ receptor: { regimenFiscal: '612' }, reason: 'régimen as registered' });
    expect(correction.requestedBy).toBe('pos');
  });

  it('lists every dead letter, newest first, each with why it stopped and its own retry form', async () => {
    const letters = [];
    // More than the page asks for at once (8), so the order holds across its rounds.
    const whys = [
      'PAC timeout',
      'primary: connection refused',
      'backup: 503',
      ...[3, 4, 5, 6, 7, 8, 9].map((n) => `CFDI33${n}`),
    ];
    for (const [n, why] of whys.entries()) {
      const made = await sale(`CON-DL${n}`);
      const row = await api.prisma.outboxRow.findFirstOrThrow({ where: { invoiceId: made.id } });
      await deadLetterOutboxRow(api.prisma, { outboxId: row.id, invoiceId: made.id }, `EUNKNOWN: ${why}`);
      letters.push({ ...made, outboxId: row.id, why });
    }
    const page = await (await signedIn()).get('/console/dead-letters');
    expect(page.status).toBe(200);
    expect(page.html).toContain('Dead letters (10)');
    const rows = [...page.html.matchAll(/<tr><td><a href="[^"]*">([^<]+)<\/a><\/td><td>[^<]*<\/td><td>([^<]*)<\/td>/g)];
    const newestFirst = [...letters].reverse();
    expect(rows.map((r) => [r[1], r[2]])).toEqual(newestFirst.map((l) => [l.serieFolio, `EUNKNOWN: ${l.why}`]));
    for (const l of letters) hiddenOf(page.html, `/console/dead-letters/${l.outboxId}/retry`);
  });
});

describe('a key revoked while signed in', () => {
  it('ends the session at the next page', async () => {
    const viewer = await signedIn(READ_ONLY);
    expect((await viewer.get('/console/needs-data')).status).toBe(200);
    await api.prisma.apiClient.updateMany({ where: { name: 'viewer' }, data: { revokedAt: new Date() } });
    const next = await viewer.get('/console/needs-data');
    expect(next).toMatchObject({ status: 303, location: '/console/login' });
    expect(next.set).toMatch(/^timbra_console=;/);
    expect((await browser().post('/console/login', { key: READ_ONLY })).status).toBe(401);
  });
});

describe("the console's calls to the API", () => {
  let limited: TestApi;
  beforeAll(async () => {
    // Behind a proxy that says who the browser is; 3 failed keys a minute per address.
    limited = await startApi({ trustProxy: true, authFailures: { perAddress: 3, perPrefix: 100 } });
  });
  afterAll(() => limited.close());

  const login = (key: string, from: string) =>
    fetch(`${limited.url}/console/login`, {
      method: 'POST',
      body: new URLSearchParams({ key }),
      headers: { 'x-forwarded-for': from },
      redirect: 'manual',
    });

  it("count a wrong key against the browser's address, not the console's, and cannot be vouched for from outside", async () => {
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await login(`guess-${i}-0123456789abcdef`, '203.0.113.7')).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // The right key from that address is refused too this minute; from another it signs in.
    expect((await login(KEYS.pos, '203.0.113.7')).status).toBe(429);
    expect((await login(KEYS.pos, '198.51.100.20')).status).toBe(303);
    // A request claiming to be the console's for another address is answered as its own.
    const forged = await fetch(`${limited.url}/v1/invoices`, {
      headers: {
        authorization: `Bearer ${KEYS.pos}`,
        'x-forwarded-for': '203.0.113.7',
        'x-timbra-console-client': '198.51.100.99 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      },
    });
    expect(forged.status).toBe(429);
  });
});
