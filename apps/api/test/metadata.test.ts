import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { createTimbra } from '@timbra/client';
import { KEYS, paymentIntentSucceeded, stampAsWorker, startApi, stripeDelivery, type TestApi } from './helpers.ts';

// Metadata through the typed client against the running API: kept, changed, filtered on, refused
// past Stripe's limits, carried over from a Stripe PaymentIntent, and never written into a CFDI.

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true });
});
afterAll(() => api.close());

const recent = () => new Date(Date.now() - 60_000).toISOString();
const timbra = () => createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
const sale = (externalId: string, metadata?: Record<string, string>) =>
  timbra().POST('/v1/payments', {
    body: { externalId, amount: '116.00', currency: 'MXN', occurredAt: recent(), ...(metadata ? { metadata } : {}) },
  });

describe('metadata', () => {
  it('is kept on the payment and its invoice, found by filter, and never in the CFDI or its PDF', async () => {
    const made = await sale('M-1', { order_id: 'ORDEN-7781', store: 'tienda-norte', empty: '' });
    expect(made.response.status).toBe(201);
    // A key given "" on a new object is simply not stored.
    expect(made.data!.metadata).toEqual({ order_id: 'ORDEN-7781', store: 'tienda-norte' });
    await sale('M-2', { order_id: 'ORDEN-7782', store: 'tienda-norte' });
    await sale('M-3');

    const byOrder = await timbra().GET('/v1/payments', { params: { query: { metadata: { order_id: 'ORDEN-7781' } } } });
    expect(byOrder.data!.data.map((p) => p.externalId)).toEqual(['M-1']);
    const byStore = await timbra().GET('/v1/payments', { params: { query: { metadata: { store: 'tienda-norte' } } } });
    expect(byStore.data!.data.map((p) => p.externalId)).toEqual(['M-2', 'M-1']);
    const both = await timbra().GET('/v1/payments', {
      params: { query: { metadata: { store: 'tienda-norte', order_id: 'ORDEN-7782' } } },
    });
    expect(both.data!.data.map((p) => p.externalId)).toEqual(['M-2']);
    const none = await timbra().GET('/v1/payments', { params: { query: { metadata: { store: 'tienda-sur' } } } });
    expect(none.data!.data).toEqual([]);

    const invoiceId = made.data!.invoices[0]!.id;
    const before = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    const tagged = await timbra().PATCH('/v1/invoices/{id}/metadata', {
      params: { path: { id: invoiceId } },
      body: { metadata: { contabilidad: 'POLIZA-55' } },
    });
    expect(tagged.data!.metadata).toEqual({ contabilidad: 'POLIZA-55' });
    // The CFDI is not touched: same version, same frozen bytes.
    const after = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    expect({ version: after.version, frozenXml: after.frozenXml }).toEqual({
      version: before.version,
      frozenXml: before.frozenXml,
    });
    const invoices = await timbra().GET('/v1/invoices', {
      params: { query: { metadata: { contabilidad: 'POLIZA-55' } } },
    });
    expect(invoices.data!.data.map((i) => i.id)).toEqual([invoiceId]);

    await stampAsWorker(api.prisma, invoiceId, 'AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE');
    const xml = await got(`${api.url}/v1/invoices/${invoiceId}/xml`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
    }).text();
    const pdf = await got(`${api.url}/v1/invoices/${invoiceId}/pdf`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
    }).buffer();
    const pdfText = execFileSync('pdftotext', ['-', '-'], { input: pdf }).toString();
    expect(xml).toContain('Total="116.00"');
    expect(pdfText).toContain('116.00');
    for (const value of ['ORDEN-7781', 'tienda-norte', 'POLIZA-55', 'order_id', 'contabilidad']) {
      expect({ value, inXml: xml.includes(value), inPdf: pdfText.includes(value) }).toEqual({
        value,
        inXml: false,
        inPdf: false,
      });
    }
  });

  it('changes by merging: keys set, "" removes, the rest kept; refused whole past 50 keys', async () => {
    const made = await sale('M-merge', { a: '1', b: '2' });
    const id = made.data!.id;
    const change = (metadata: Record<string, string>) =>
      timbra().PATCH('/v1/payments/{id}', { params: { path: { id } }, body: { metadata } });
    expect((await change({ b: '', c: '3' })).data!.metadata).toEqual({ a: '1', c: '3' });

    const many = Object.fromEntries(Array.from({ length: 48 }, (_, i) => [`k${i}`, 'v']));
    expect(Object.keys((await change(many)).data!.metadata)).toHaveLength(50);
    const over = await change({ one_more: 'v' });
    expect(over.response.status).toBe(422);
    expect(over.error!.error).toMatchObject({ code: 'validation_failed', param: 'metadata' });
    // Replacing one key for another at the limit is fine: the count is of the result.
    expect((await change({ a: '', one_more: 'v' })).data!.metadata).toMatchObject({ one_more: 'v', c: '3' });
    const stored = await api.prisma.payment.findUniqueOrThrow({ where: { id } });
    expect(Object.keys(stored.metadata as object)).toHaveLength(50);
  });

  it.each([
    ['51 keys', Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])), 'metadata'],
    ['a key of 41 characters', { ['k'.repeat(41)]: 'v' }, `metadata.${'k'.repeat(41)}`],
    ['a key with square brackets', { 'a[b]': 'v' }, 'metadata.a[b]'],
    ['a value of 501 characters', { note: 'x'.repeat(501) }, 'metadata.note'],
    ['a number', { count: 3 }, 'metadata.count'],
    ['a nested object', { deep: { a: 'b' } }, 'metadata.deep'],
    ['a list', ['a'], 'metadata'],
  ])('refuses %s with 422 naming it, and records nothing', async (_name, metadata, path) => {
    const before = await api.prisma.payment.count();
    const res = await got.post(`${api.url}/v1/payments`, {
      json: { externalId: `M-bad-${path.length}`, amount: '1.16', currency: 'MXN', occurredAt: recent(), metadata },
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
      responseType: 'json',
    });
    const body = res.body as { error: { code: string; details: { path: string }[] } };
    expect(res.statusCode).toBe(422);
    expect(body.error.code).toBe('validation_failed');
    expect(body.error.details.map((d) => d.path)).toContain(path);
    expect(await api.prisma.payment.count()).toBe(before);
  });

  it('refuses a malformed filter by name instead of ignoring it', async () => {
    const res = await got(`${api.url}/v1/payments?metadata[${'k'.repeat(41)}]=1&metadata[a]=1&metadata[a]=2`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
      responseType: 'json',
    });
    expect(res.statusCode).toBe(422);
    const paths = (res.body as { error: { details: { path: string }[] } }).error.details.map((d) => d.path);
    expect(paths).toEqual([`metadata[${'k'.repeat(41)}]`, 'metadata[a]']);
    const typo = await got(`${api.url}/v1/payments?metadata=x`, {
      headers: { authorization: `Bearer ${KEYS.pos}` },
      throwHttpErrors: false,
      responseType: 'json',
    });
    expect(typo.statusCode).toBe(400);
  });

  it('is kept on customers: created with it, changed with other fields or alone, all or nothing', async () => {
    const created = await timbra().POST('/v1/customers', {
      body: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        codigoPostal: '36257',
        regimenFiscal: '612',
        usoCfdi: 'G03',
        metadata: { crm_id: 'C-100' },
      },
    });
    const id = created.data!.id;
    expect(created.data!.metadata).toEqual({ crm_id: 'C-100' });
    const alone = await timbra().PATCH('/v1/customers/{id}', {
      params: { path: { id } },
      body: { metadata: { segment: 'mayoreo' } },
    });
    expect(alone.data!.metadata).toEqual({ crm_id: 'C-100', segment: 'mayoreo' });
    // A refused field leaves the metadata as it was.
    const refused = await timbra().PATCH('/v1/customers/{id}', {
      params: { path: { id } },
      body: { usoCfdi: 'XX99', metadata: { segment: '' } },
    });
    expect(refused.response.status).toBe(422);
    const listed = await timbra().GET('/v1/customers', { params: { query: { metadata: { segment: 'mayoreo' } } } });
    expect(listed.data!.data.map((c) => c.id)).toEqual([id]);
  });

  it("keeps a Stripe PaymentIntent's metadata on the payment it records", async () => {
    const event = paymentIntentSucceeded({ metadata: { order_id: 'SHOP-991', channel: 'web' } });
    const delivery = stripeDelivery(event);
    const res = await got.post(`${api.url}/webhooks/stripe`, {
      body: delivery.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
      throwHttpErrors: false,
    });
    expect(res.statusCode).toBe(200);
    const found = await timbra().GET('/v1/payments', { params: { query: { metadata: { order_id: 'SHOP-991' } } } });
    expect(found.data!.data).toHaveLength(1);
    expect(found.data!.data[0]!.metadata).toEqual({ order_id: 'SHOP-991', channel: 'web' });
  });
});
