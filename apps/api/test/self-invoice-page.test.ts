/**
 * The self-invoicing page over HTTP, as a browser speaks to it (form posts, cookies, redirects):
 * CSRF, the limits on guessing, the errors a customer sees, the redirect that makes a double submit
 * harmless and the downloads. The real browser walk is apps/worker/test/self-invoice-browser.test.ts.
 *
 * @clock a ticket's period, and whether its global is issued
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { walkInvoiceTo } from '@timbra/db/testing';
import { jsonPoster, stampAsWorker, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
let limited: TestApi;
beforeAll(async () => {
  api = await startApi({ global: { maxConceptosPerGlobal: 100 } });
  limited = await startApi({
    global: { maxConceptosPerGlobal: 100 },
    selfInvoice: { requestsPerMinute: 1000, failuresPerMinute: 3 },
  });
});
afterAll(async () => {
  await api.close();
  await limited.close();
});

const CUSTOMER = {
  rfc: 'CACX7605101P8',
  nombre: 'Xochilt Casas Chavez',
  codigoPostal: '36257',
  regimenFiscal: '612',
  usoCfdi: 'G03',
};

async function ticket(on: TestApi, amount = '116.00'): Promise<{ code: string; paymentId: string }> {
  const res = await jsonPoster(() => on)('/v1/payments', {
    externalId: `P-${randomUUID()}`,
    amount,
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
  });
  const body = res.body as { id: string; ticket: { code: string } };
  return { code: body.ticket.code, paymentId: body.id };
}

/** Opens the form: its CSRF cookie and field. */
async function openForm(on: TestApi): Promise<{ cookie: string; csrf: string; html: string }> {
  const res = await got.get(`${on.url}/facturar`);
  const cookie = /timbra_csrf=([^;]+)/.exec(String(res.headers['set-cookie']))![1]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(res.body)![1]!;
  return { cookie, csrf, html: res.body };
}

function submit(on: TestApi, fields: Record<string, string>, session: { cookie: string; csrf: string } | null) {
  return got.post(`${on.url}/facturar`, {
    form: { ...(session ? { _csrf: session.csrf } : {}), ...fields },
    headers: session ? { cookie: `timbra_csrf=${session.cookie}` } : {},
    throwHttpErrors: false,
    followRedirect: false,
  });
}

describe('/facturar (self-invoicing page)', () => {
  it('is Spanish, labelled, and sets an HttpOnly SameSite=Strict CSRF cookie', async () => {
    const res = await got.get(`${api.url}/facturar`);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toContain('<html lang="es">');
    for (const id of ['codigo', 'total', 'rfc', 'nombre', 'codigoPostal', 'regimenFiscal', 'usoCfdi', 'email'])
      expect(res.body).toContain(`<label for="${id}">`);
    expect(String(res.headers['set-cookie'])).toMatch(
      /timbra_csrf=[\w-]{32}; Path=\/facturar; HttpOnly; SameSite=Strict/,
    );
    // Pagos' and nómina's uses are not offered for a purchase.
    expect(res.body).not.toContain('value="CP01"');
  });

  it('refuses a post without the CSRF token, with a token that is not the cookie, or from another origin: nothing is invoiced', async () => {
    const t = await ticket(api);
    const fields = { codigo: t.code, total: '116.00', ...CUSTOMER };
    const session = await openForm(api);
    expect((await submit(api, fields, null)).statusCode).toBe(403);
    expect((await submit(api, fields, { cookie: session.cookie, csrf: `${session.csrf.slice(1)}x` })).statusCode).toBe(
      403,
    );
    const foreign = await got.post(`${api.url}/facturar`, {
      form: { _csrf: session.csrf, ...fields },
      headers: { cookie: `timbra_csrf=${session.cookie}`, origin: 'https://evil.example' },
      throwHttpErrors: false,
      followRedirect: false,
    });
    expect(foreign.statusCode).toBe(403);
    expect(await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } })).toMatchObject({ status: 'open' });
  });

  it('shows each mistake beside its field, and narrows the usos to the régimen once known', async () => {
    const t = await ticket(api);
    const session = await openForm(api);
    const res = await submit(
      api,
      { codigo: t.code, total: '116.00', ...CUSTOMER, regimenFiscal: '605', usoCfdi: 'G03', codigoPostal: '3625' },
      session,
    );
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('role="alert"');
    expect(res.body).toContain('El uso G03 no está permitido para el régimen 605');
    expect(res.body).toContain('El código postal tiene 5 dígitos.');
    expect(res.body).toMatch(
      /id="usoCfdi" name="usoCfdi" aria-invalid="true" aria-describedby="usoCfdi-ayuda usoCfdi-error"/,
    );
    // Only what c_UsoCFDI allows with 605: D10 (colegiaturas) is offered, G03 no longer.
    expect(res.body).toContain('value="D10"');
    expect(res.body).not.toContain('value="G03"');
    // What was typed is kept.
    expect(res.body).toContain(`value="${t.code}"`);
  });

  it('a wrong code or total is one answer; after FAILURES_PER_MINUTE of them the address waits (429)', async () => {
    const t = await ticket(limited);
    const session = await openForm(limited);
    const wrong = await submit(limited, { codigo: t.code, total: '116.01', ...CUSTOMER }, session);
    expect(wrong.statusCode).toBe(404);
    expect(wrong.body).toContain('No encontramos un ticket con ese código y ese total');
    const unknown = await submit(limited, { codigo: 'ZZZZZZZZZZ', total: '116.00', ...CUSTOMER }, session);
    expect(unknown.body).toContain('No encontramos un ticket con ese código y ese total');
    expect((await submit(limited, { codigo: 'YYYYYYYYYY', total: '1.00', ...CUSTOMER }, session)).statusCode).toBe(404);
    const blocked = await submit(limited, { codigo: 'XXXXXXXXXX', total: '1.00', ...CUSTOMER }, session);
    expect(blocked.statusCode).toBe(429);
    // Even the right code and total are refused from that address for now: guessing does not pay.
    expect((await submit(limited, { codigo: t.code, total: '116.00', ...CUSTOMER }, session)).statusCode).toBe(429);
  });

  it('a good submission redirects (303) to the ticket page; a double submit lands on the same invoice; the PDF and XML download once stamped', async () => {
    const t = await ticket(api, '580.00');
    const session = await openForm(api);
    const fields = { codigo: t.code.toLowerCase(), total: '$580', ...CUSTOMER, email: 'cliente@example.com' };
    const [first, second] = await Promise.all([submit(api, fields, session), submit(api, fields, session)]);
    expect(first.statusCode).toBe(303);
    expect(second.statusCode).toBe(303);
    expect(second.headers.location).toBe(first.headers.location);
    const pageUrl = `${api.url}${first.headers.location}`;
    const pending = await got.get(pageUrl);
    expect(pending.body).toContain('Estamos timbrando tu factura');
    expect(pending.headers.refresh).toBe('2');
    expect((await got.get(`${pageUrl}/factura.pdf`, { throwHttpErrors: false })).statusCode).toBe(404);

    const row = await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } });
    expect(row.status).toBe('self_invoiced');
    expect(await api.prisma.invoice.count({ where: { paymentId: t.paymentId } })).toBe(1);
    const uuid = randomUUID().toUpperCase();
    await stampAsWorker(api.prisma, row.invoiceId!, uuid);
    const ready = await got.get(pageUrl);
    expect(ready.body).toContain('Tu factura está lista');
    expect(ready.body).toContain(uuid);
    expect(ready.body).toContain('cliente@example.com');
    // And emailed, as any invoice's copy: its delivery was written with the stamp (docs/outbound.md).
    const emails = await api.prisma.delivery.findMany({
      where: { channel: 'email', recipient: 'cliente@example.com' },
    });
    expect(emails).toHaveLength(1);
    const pdf = await got.get(`${pageUrl}/factura.pdf`, { responseType: 'buffer' });
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.body.subarray(0, 5).toString()).toBe('%PDF-');
    const xml = await got.get(`${pageUrl}/factura.xml`);
    expect(xml.body).toContain(`UUID="${uuid}"`);
    expect(xml.body).toContain('Rfc="CACX7605101P8"');
    // A made-up link finds nothing.
    expect((await got.get(`${api.url}/facturar/ticket/${'A'.repeat(32)}`, { throwHttpErrors: false })).statusCode).toBe(
      404,
    );
  });

  it('checks the RFC’s check digit and refuses invisible characters beside their fields, before any ticket is touched', async () => {
    const t = await ticket(api);
    const session = await openForm(api);
    const res = await submit(
      api,
      { codigo: t.code, total: '116.00', ...CUSTOMER, rfc: 'CACX7605101P9', nombre: 'Xochilt\u0000Casas' },
      session,
    );
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('debería ser 8');
    expect(res.body).toContain('carácter invisible');
    expect((await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } })).status).toBe('open');
    // An RFC the SAT issued with another digit: the page offers to confirm it, and then takes it.
    expect(res.body).toContain('name="rfcConfirmado"');
    const confirmed = await submit(
      api,
      { codigo: t.code, total: '116.00', ...CUSTOMER, rfc: 'CACX7605101P9', rfcConfirmado: '1' },
      await openForm(api),
    );
    expect(confirmed.statusCode).toBe(303);
    expect((await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } })).status).toBe('self_invoiced');
  });

  it('a self-invoice the PAC refused is corrected by the customer on the page: the rule is shown, the form again makes a new version', async () => {
    const t = await ticket(api, '232.00');
    const session = await openForm(api);
    const wrongCp = { codigo: t.code, total: '232.00', ...CUSTOMER, codigoPostal: '06600' };
    const first = await submit(api, wrongCp, session);
    expect(first.statusCode).toBe(303);
    const row = await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } });
    // What the worker does when the PAC refuses it for good (a dead letter).
    await api.prisma.outboxRow.updateMany({
      where: { invoiceId: row.invoiceId! },
      data: { lastError: 'CFDI40147: El campo DomicilioFiscalReceptor no corresponde' },
    });
    await walkInvoiceTo(api.prisma, row.invoiceId!, 'stamp_failed');
    const refused = await got.get(`${api.url}${first.headers.location}`);
    expect(refused.body).toContain('CFDI40147');
    expect(refused.body).toContain('vuelve a enviar el formulario');

    const corrected = await submit(api, { ...wrongCp, codigoPostal: '36257' }, await openForm(api));
    expect(corrected.statusCode).toBe(303);
    expect(corrected.headers.location).toBe(first.headers.location);
    const invoice = await api.prisma.invoice.findUniqueOrThrow({ where: { id: row.invoiceId! } });
    expect(invoice.status).toBe('pending');
    expect(invoice.version).toBe(2);
    expect(invoice.frozenXml).toContain('DomicilioFiscalReceptor="36257"');
    // Another RFC for a ticket whose invoice is on its way is still refused.
    const other = await submit(
      api,
      { ...wrongCp, rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601', codigoPostal: '42501' },
      await openForm(api),
    );
    expect(other.statusCode).toBe(409);
  });

  it('a ticket whose period has its global is refused with the SAT rule named', async () => {
    const t = await ticket(api, '10.00');
    const row = await api.prisma.ticket.findFirstOrThrow({ where: { code: t.code } });
    const issue = await jsonPoster(() => api, 'admin-key-0123456789abcdef')('/v1/globals', {
      startsOn: row.periodStartsOn.toISOString().slice(0, 10),
    });
    expect(issue.statusCode).toBe(201);
    const session = await openForm(api);
    const res = await submit(api, { codigo: t.code, total: '10.00', ...CUSTOMER }, session);
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain('factura global');
    expect(res.body).toContain('2.7.1.21');
  });

  it('over plain HTTP no header makes a browser refuse the page: no HSTS, no upgrade-insecure-requests; HSTS over https behind a proxy', async () => {
    const plain = await got.get(`${api.url}/facturar`);
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    expect(plain.headers['content-security-policy']).toContain("default-src 'self'");
    expect(plain.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    const proxied = await startApi({
      database: api.db,
      trustProxy: true,
      global: { maxConceptosPerGlobal: 100 },
    });
    try {
      const behindTls = await got.get(`${proxied.url}/facturar`, { headers: { 'x-forwarded-proto': 'https' } });
      expect(behindTls.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
      const behindPlain = await got.get(`${proxied.url}/facturar`, { headers: { 'x-forwarded-proto': 'http' } });
      expect(behindPlain.headers['strict-transport-security']).toBeUndefined();
    } finally {
      await proxied.close();
    }
  });

  it('per-payment mode has no page', async () => {
    const plain = await startApi();
    try {
      expect((await got.get(`${plain.url}/facturar`, { throwHttpErrors: false })).statusCode).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
