/**
 * The merchant's side of outbound delivery through the API: registering webhook endpoints (secret
 * shown once, admin keys only), the events a payment writes with it, the delivery log, replays, and
 * the customer's email address and resend. The worker's sending is tested in apps/worker
 * (deliveries.test.ts) against a real SMTP server and a real receiver.
 *
 * @clock a rotated secret's grace period; Timbra-Signature's timestamp
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, startApi, type TestApi, stampAsWorker } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, key = KEYS.admin) =>
  got(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'idempotency-key': `k-${Math.random()}` },
    ...(body !== undefined ? { json: body } : {}),
    throwHttpErrors: false,
    responseType: 'json',
  }) as unknown as Promise<{ statusCode: number; body: Record<string, unknown> & { error?: { code: string } } }>;

async function payment(externalId: string, extra: Record<string, unknown> = {}) {
  const res = await call(
    'POST',
    '/v1/payments',
    { externalId, amount: '116.00', currency: 'MXN', occurredAt: new Date().toISOString(), ...extra },
    KEYS.pos,
  );
  expect(res.statusCode).toBe(201);
  return res.body as { id: string; email: string | null; invoices: { id: string }[] };
}

const stamp = (invoiceId: string, uuid: string) => stampAsWorker(api.prisma, invoiceId, uuid);

describe('webhook endpoints', () => {
  it('registers an endpoint (secret shown once), lists it without the secret, and only for admin keys', async () => {
    const created = await call('POST', '/v1/webhook-endpoints', {
      url: 'https://erp.example.com/timbra',
      events: ['invoice.stamped', 'invoice.failed', 'invoice.stamped'],
      description: 'ERP',
    });
    expect(created.statusCode).toBe(201);
    expect(created.body).toMatchObject({
      url: 'https://erp.example.com/timbra',
      events: ['invoice.stamped', 'invoice.failed'],
      status: 'enabled',
      consecutiveFailures: 0,
    });
    expect(String(created.body.secret)).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const id = String(created.body.id);
    const read = await call('GET', `/v1/webhook-endpoints/${id}`);
    expect(read.statusCode).toBe(200);
    expect(read.body).not.toHaveProperty('secret');
    const list = await call('GET', '/v1/webhook-endpoints');
    expect(JSON.stringify(list.body)).not.toContain(String(created.body.secret));
    expect((list.body.data as { id: string }[]).map((e) => e.id)).toContain(id);

    const forbidden = await call(
      'POST',
      '/v1/webhook-endpoints',
      { url: 'https://x.example.com', events: ['*'] },
      KEYS.pos,
    );
    expect(forbidden.statusCode).toBe(403);
    expect((await call('GET', '/v1/webhook-endpoints', undefined, KEYS.pos)).statusCode).toBe(403);
  });

  it('rotates the secret: the new one shown once, the old one signing beside it until the grace period ends', async () => {
    const created = await call('POST', '/v1/webhook-endpoints', { url: 'https://rot.example.com/hook', events: ['*'] });
    const id = String(created.body.id);
    const rotated = await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { graceHours: 2 });
    expect(rotated.statusCode).toBe(200);
    expect(String(rotated.body.secret)).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const until = Date.parse(String(rotated.body.previousSecretValidUntil));
    expect(until - Date.now()).toBeGreaterThan(7_100_000);
    expect(until - Date.now()).toBeLessThan(7_300_000);
    const row = await api.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ secret: rotated.body.secret, previousSecret: created.body.secret });
    const read = await call('GET', `/v1/webhook-endpoints/${id}`);
    expect(JSON.stringify(read.body)).not.toContain('whsec_');
    // At once: the old secret stops signing now.
    const now = await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, { graceHours: 0 });
    expect(now.body.previousSecretValidUntil).toBeNull();
    expect((await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, {}, KEYS.pos)).statusCode).toBe(403);
  });

  it('refuses a plain-http URL off this machine, credentials in the URL and unknown events, with the field named', async () => {
    for (const [body, path] of [
      [{ url: 'http://erp.example.com/hook', events: ['*'] }, 'url'],
      [{ url: 'https://user:pw@erp.example.com/hook', events: ['*'] }, 'url'],
      [{ url: 'https://erp.example.com/hook', events: ['invoice.printed'] }, 'events.0'],
      [{ url: 'https://erp.example.com/hook', events: [] }, 'events'],
    ] as const) {
      const res = await call('POST', '/v1/webhook-endpoints', body);
      expect(res.statusCode).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'validation_failed', details: [expect.objectContaining({ path })] });
    }
    expect(
      (await call('POST', '/v1/webhook-endpoints', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).statusCode,
    ).toBe(201);
  });

  it('with production rules, an endpoint at a non-public address is refused at registration and on a change, unless allowlisted', async () => {
    const production = await startApi({ webhookAllowedAddresses: [], database: api.db });
    const allowlisted = await startApi({ webhookAllowedAddresses: ['10.0.0.0/8'], database: api.db });
    try {
      const register = (on: TestApi, url: string) =>
        got.post(`${on.url}/v1/webhook-endpoints`, {
          json: { url, events: ['*'] },
          headers: { authorization: `Bearer ${KEYS.admin}` },
          throwHttpErrors: false,
          responseType: 'json',
        }) as unknown as Promise<{
          statusCode: number;
          body: { id?: string; error?: { code: string; details: unknown } };
        }>;
      for (const url of [
        'http://127.0.0.1:9/hook',
        'https://10.0.0.5/hook',
        'https://169.254.169.254/latest/meta-data/',
        'https://[::1]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        'http://localhost:8080/hook',
        'https://0.0.0.0/hook',
        'https://100.64.1.1/hook',
      ]) {
        const res = await register(production, url);
        expect([url, res.statusCode]).toEqual([url, 422]);
        expect(res.body.error).toMatchObject({
          code: 'validation_failed',
          details: [{ path: 'url', message: expect.stringMatching(/public address .*WEBHOOK_ALLOWED_ADDRESSES/) }],
        });
      }
      expect((await register(production, 'https://93.184.216.34/hook')).statusCode).toBe(201);
      expect((await register(allowlisted, 'https://10.0.0.5/hook')).statusCode).toBe(201);
      const created = await register(allowlisted, 'https://10.0.0.6/hook');
      const moved = await got.patch(`${production.url}/v1/webhook-endpoints/${created.body.id!}`, {
        json: { url: 'https://192.168.0.10/hook' },
        headers: { authorization: `Bearer ${KEYS.admin}` },
        throwHttpErrors: false,
      });
      expect(moved.statusCode).toBe(422);
    } finally {
      await production.close();
      await allowlisted.close();
    }
  });

  it('a payment writes payment.recorded for every subscribed endpoint in its own transaction; the log shows it; replay and disable work', async () => {
    const ep = await call('POST', '/v1/webhook-endpoints', {
      url: 'https://pay.example.com/hook',
      events: ['payment.recorded'],
    });
    const endpointId = String(ep.body.id);
    const p = await payment('OUT-1');
    const log = await call('GET', `/v1/webhook-endpoints/${endpointId}/deliveries`);
    expect(log.statusCode).toBe(200);
    const [delivery] = log.body.data as { id: string; eventType: string; paymentId: string; status: string }[];
    expect(delivery).toMatchObject({
      eventType: 'payment.recorded',
      paymentId: p.id,
      status: 'pending',
      channel: 'webhook',
    });
    const one = await call('GET', `/v1/deliveries/${delivery!.id}`);
    expect(one.body).toMatchObject({ id: delivery!.id, log: [], attempts: 0 });
    expect(
      (await call('GET', `/v1/deliveries?paymentId=${p.id}&channel=webhook&endpointId=${endpointId}`)).body.data,
    ).toEqual([expect.objectContaining({ id: delivery!.id })]);
    // A replay is a new delivery of the same event.
    const replay = await call('POST', `/v1/deliveries/${delivery!.id}/replay`, {});
    expect(replay.statusCode).toBe(202);
    expect(replay.body).toMatchObject({
      replayOf: delivery!.id,
      eventType: 'payment.recorded',
      requestedBy: 'api:ops',
    });
    // Disabled: its pending deliveries are dead (with why), new events skip it, a replay is refused.
    const disabled = await call('PATCH', `/v1/webhook-endpoints/${endpointId}`, { status: 'disabled' });
    expect(disabled.body).toMatchObject({ status: 'disabled', disabledReason: 'disabled by api:ops' });
    expect((await call('GET', `/v1/deliveries/${delivery!.id}`)).body).toMatchObject({ status: 'dead' });
    await payment('OUT-2');
    expect(((await call('GET', `/v1/webhook-endpoints/${endpointId}/deliveries`)).body.data as unknown[]).length).toBe(
      2,
    );
    const refused = await call('POST', `/v1/deliveries/${delivery!.id}/replay`, {});
    expect(refused.statusCode).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'endpoint_disabled' });
    expect((await call('PATCH', `/v1/webhook-endpoints/${endpointId}`, { status: 'enabled' })).body).toMatchObject({
      status: 'enabled',
      disabledReason: null,
    });
    expect((await call('POST', `/v1/deliveries/${delivery!.id}/replay`, {})).statusCode).toBe(202);
  });

  it('a payment refused before any row writes no event', async () => {
    const before = await api.prisma.event.count();
    const res = await call(
      'POST',
      '/v1/payments',
      {
        externalId: 'OUT-BAD',
        amount: '10.00',
        currency: 'MXN',
        occurredAt: new Date().toISOString(),
        customerId: '00000000-0000-4000-8000-000000000000',
      },
      KEYS.pos,
    );
    expect(res.statusCode).toBe(422);
    expect(await api.prisma.event.count()).toBe(before);
  });
});

describe('the customer’s email', () => {
  it('is the payment’s (or its customer’s); the stamp writes the email delivery; a resend goes to another address', async () => {
    const p = await payment('MAIL-1', { email: 'cliente@example.com' });
    expect(p.email).toBe('cliente@example.com');
    const invoiceId = p.invoices[0]!.id;
    // Not stamped yet: nothing to send.
    const early = await call('POST', `/v1/invoices/${invoiceId}/email`, {}, KEYS.pos);
    expect(early.statusCode).toBe(409);
    expect(early.body.error).toMatchObject({ code: 'not_stamped' });
    await stamp(invoiceId, 'D1C2D3E4-F5A6-4B7C-8D9E-0F1A2B3C4D5E');
    const emails = (await call('GET', `/v1/deliveries?invoiceId=${invoiceId}&channel=email`, undefined, KEYS.pos)).body
      .data as { recipient: string; eventType: string }[];
    expect(emails).toEqual([
      expect.objectContaining({ recipient: 'cliente@example.com', eventType: 'invoice.stamped' }),
    ]);
    const resent = await call('POST', `/v1/invoices/${invoiceId}/email`, { to: 'contador@example.com' }, KEYS.pos);
    expect(resent.statusCode).toBe(202);
    expect(resent.body).toMatchObject({ to: 'contador@example.com', message: 'invoice.stamped', status: 'pending' });
    const bad = await call('POST', `/v1/invoices/${invoiceId}/email`, { to: 'not-an-address' }, KEYS.pos);
    expect(bad.statusCode).toBe(422);

    const customer = await call(
      'POST',
      '/v1/customers',
      {
        rfc: 'XIA190128J61',
        nombre: 'XENON INDUSTRIAL ARTICLES',
        codigoPostal: '76343',
        regimenFiscal: '601',
        usoCfdi: 'G03',
        email: 'compras@xenon.example',
      },
      KEYS.pos,
    );
    expect(customer.statusCode).toBe(201);
    const fromCustomer = await payment('MAIL-2', { customerId: customer.body.id });
    expect(fromCustomer.email).toBe('compras@xenon.example');
  });

  it('without an address the stamp sends no email, and a resend without `to` says so', async () => {
    const p = await payment('MAIL-3');
    const invoiceId = p.invoices[0]!.id;
    await stamp(invoiceId, 'E1C2D3E4-F5A6-4B7C-8D9E-0F1A2B3C4D5E');
    expect(await api.prisma.delivery.count({ where: { event: { invoiceId }, channel: 'email' } })).toBe(0);
    const res = await call('POST', `/v1/invoices/${invoiceId}/email`, {}, KEYS.pos);
    expect(res.statusCode).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'no_email_address' });
  });
});
