import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import got, { type OptionsOfTextResponseBody, type Response } from 'got';
import { parse } from 'yaml';
import { z } from 'zod';
import { LocalKeyVault } from '@timbra/cfdi-node';
import { walkInvoiceTo } from '@timbra/db/testing';
import { testCsdFiles, testEfirmaFor, TINY_PNG } from '@timbra/test-support';
import { createPaymentSchema } from '../src/payments/payment-routes.ts';
import { createInstallmentSchema, createRefundSchema } from '../src/refunds-installments/refund-routes.ts';
import { cancelInvoiceSchema } from '../src/invoices/cancellation-routes.ts';
import { customerSchema, productSchema } from '../src/catalog/catalog-schemas.ts';
import { KEYS, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

/**
 * apps/api/openapi.yaml is a valid OpenAPI 3.1 document, and the running app answers what it says:
 * every documented operation is called here and each answer is validated against the document's
 * schema for that path, method and status.
 */
const documentUrl = new URL('../openapi.yaml', import.meta.url);
const doc = parse(readFileSync(documentUrl, 'utf8')) as {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> };
  webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: object }> } } }>;
};

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));

/** The document's object at a local reference (`#/components/responses/Error`). */
function lookup(ref: string): unknown {
  return ref
    .slice(2)
    .split('/')
    .reduce<unknown>(
      (node, key) => (node as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')],
      doc,
    );
}

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const called = new Set<string>();

/** Validates an answer against the document; remembers the operation as covered. */
function conforms(path: string, method: string, res: Response<string>): void {
  called.add(`${method} ${path}`);
  const status = String(res.statusCode);
  const operation = doc.paths[path]?.[method];
  expect({ operation: `${method} ${path}`, documented: operation !== undefined }).toEqual({
    operation: `${method} ${path}`,
    documented: true,
  });
  expect({ operation: `${method} ${path}`, status, documented: status in operation!.responses }).toEqual({
    operation: `${method} ${path}`,
    status,
    documented: true,
  });
  if (status === '204') {
    // No content: documented without one, and nothing sent.
    expect({ operation: `${method} ${path}`, body: res.body }).toEqual({ operation: `${method} ${path}`, body: '' });
    return;
  }
  const type = String(res.headers['content-type'] ?? '').split(';')[0]!;
  let response = operation!.responses[status] as { $ref?: string; content?: Record<string, { schema: object }> };
  if (response.$ref) response = lookup(response.$ref) as typeof response;
  expect(Object.keys(response.content ?? {})).toContain(type);
  if (type !== 'application/json') return;
  // Compiled with the document's components beside it, so `#/components/…` references resolve.
  const validate = ajv.compile({ ...response.content![type]!.schema, components: doc.components });
  const body: unknown = JSON.parse(res.body);
  const valid = validate(body);
  expect({ operation: `${method} ${path} → ${status}`, errors: valid ? null : validate.errors }).toEqual({
    operation: `${method} ${path} → ${status}`,
    errors: null,
  });
}

const auth = { authorization: `Bearer ${KEYS.pos}` };
const request = (method: 'get' | 'post' | 'patch', url: string, options: OptionsOfTextResponseBody = {}) =>
  got(`${api.url}${url}`, { ...options, method, throwHttpErrors: false });

describe('openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(documentUrl.pathname);
    expect(result).toEqual({ valid: true });
  });

  it.each([
    ['PaymentCreate', createPaymentSchema],
    ['RefundCreate', createRefundSchema],
    ['InstallmentCreate', createInstallmentSchema],
    ['CancelCreate', cancelInvoiceSchema],
    ['ProductCreate', productSchema],
    ['CustomerCreate', customerSchema],
  ] as const)('documents the %s request exactly as the API parses it', (name, schema) => {
    // As a client writes it: fields with a default are optional.
    const parsed = z.toJSONSchema(schema, { io: 'input' }) as { properties: object; required?: string[] };
    const documented = doc.components.schemas[name]!;
    expect(Object.keys(documented.properties).sort()).toEqual(Object.keys(parsed.properties).sort());
    expect([...documented.required].sort()).toEqual([...(parsed.required ?? [])].sort());
  });

  it('describes what the running app answers, for every documented operation', async () => {
    const body = {
      externalId: 'OPENAPI-1',
      amount: '1160.00',
      currency: 'MXN',
      occurredAt: new Date(Date.now() - 60_000).toISOString(),
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '612',
        codigoPostal: '36257',
        usoCfdi: 'G03',
      },
    };
    const created = await request('post', '/v1/payments', {
      json: body,
      headers: { ...auth, 'idempotency-key': 'oa-1' },
    });
    expect(created.statusCode).toBe(201);
    conforms('/v1/payments', 'post', created);
    conforms('/v1/payments', 'post', await request('post', '/v1/payments', { json: body, headers: auth }));
    conforms(
      '/v1/payments',
      'post',
      await request('post', '/v1/payments', { json: { ...body, amount: '-1' }, headers: auth }),
    );
    conforms('/v1/payments', 'post', await request('post', '/v1/payments', { json: body }));
    conforms(
      '/v1/payments',
      'post',
      await request('post', '/v1/payments', {
        body: '{"a":',
        headers: { ...auth, 'content-type': 'application/json' },
      }),
    );

    const payment = JSON.parse(created.body) as { id: string; invoices: { id: string; serieFolio: string }[] };
    conforms('/v1/payments', 'get', await request('get', '/v1/payments?limit=1', { headers: auth }));
    conforms('/v1/payments', 'get', await request('get', '/v1/payments?limit=0', { headers: auth }));
    conforms('/v1/payments/{id}', 'get', await request('get', `/v1/payments/${payment.id}`, { headers: auth }));
    conforms(
      '/v1/payments/{id}',
      'get',
      await request('get', `/v1/payments/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, { headers: auth }),
    );

    // Metadata: set, filtered on, refused past its limits, and on an invoice.
    const paymentMetadata = (json: object) => request('patch', `/v1/payments/${payment.id}`, { json, headers: auth });
    conforms('/v1/payments/{id}', 'patch', await paymentMetadata({ metadata: { order: 'A-1', store: 'norte' } }));
    conforms('/v1/payments/{id}', 'patch', await paymentMetadata({ metadata: { 'a[b]': 'x' } }));
    conforms('/v1/payments/{id}', 'patch', await paymentMetadata({ metadata: {}, amount: '1.00' }));
    conforms(
      '/v1/payments',
      'get',
      await request('get', '/v1/payments?metadata[order]=A-1&metadata[store]=norte', { headers: auth }),
    );
    conforms(
      '/v1/payments',
      'get',
      await request('get', `/v1/payments?metadata[${'k'.repeat(41)}]=1`, { headers: auth }),
    );
    const invoiceMetadata = (id: string, json: object) =>
      request('patch', `/v1/invoices/${id}/metadata`, { json, headers: auth });
    conforms(
      '/v1/invoices/{id}/metadata',
      'patch',
      await invoiceMetadata(payment.invoices[0]!.id, { metadata: { order: 'A-1' } }),
    );
    conforms(
      '/v1/invoices/{id}/metadata',
      'patch',
      await invoiceMetadata(payment.invoices[0]!.id, { metadata: { big: 'x'.repeat(501) } }),
    );
    conforms(
      '/v1/invoices/{id}/metadata',
      'patch',
      await invoiceMetadata(`${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`, { metadata: { a: 'b' } }),
    );
    conforms('/v1/invoices', 'get', await request('get', '/v1/invoices?metadata[order]=A-1', { headers: auth }));

    const refunds = `/v1/payments/${payment.id}/refunds`;
    const refundPath = '/v1/payments/{id}/refunds';
    conforms(
      refundPath,
      'post',
      await request('post', refunds, { json: { amount: '100.00', externalId: 'oa-rf-1' }, headers: auth }),
    );
    conforms(
      refundPath,
      'post',
      await request('post', refunds, { json: { amount: '100.00', externalId: 'oa-rf-1' }, headers: auth }),
    );
    conforms(
      refundPath,
      'post',
      await request('post', refunds, { json: { amount: '101.00', externalId: 'oa-rf-1' }, headers: auth }),
    );
    conforms(refundPath, 'post', await request('post', refunds, { json: { amount: '5000.00' }, headers: auth }));
    conforms(refundPath, 'post', await request('post', refunds, { json: { amount: 'x' }, headers: auth }));
    conforms(
      refundPath,
      'post',
      await request('post', `/v1/payments/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}/refunds`, {
        json: { amount: '1.00' },
        headers: auth,
      }),
    );
    conforms(refundPath, 'post', await request('post', refunds, { json: { amount: '1.00' } }));

    const ppd = await request('post', '/v1/payments', {
      json: { ...body, externalId: 'OPENAPI-PPD', paymentTerms: 'installments' },
      headers: auth,
    });
    const ppdInvoice = (JSON.parse(ppd.body) as { invoices: { id: string }[] }).invoices[0]!.id;
    const installments = `/v1/invoices/${ppdInvoice}/payments`;
    const installmentPath = '/v1/invoices/{id}/payments';
    const installment = {
      amount: '100.00',
      paidAt: new Date().toISOString(),
      formaPago: '03',
      externalId: 'oa-inst-1',
    };
    conforms(installmentPath, 'post', await request('post', installments, { json: installment, headers: auth }));
    conforms(installmentPath, 'post', await request('post', installments, { json: installment, headers: auth }));
    conforms(
      installmentPath,
      'post',
      await request('post', installments, {
        json: { ...installment, amount: '99999.00', externalId: 'oa-inst-2' },
        headers: auth,
      }),
    );
    conforms(
      installmentPath,
      'post',
      await request('post', `/v1/invoices/${payment.invoices[0]!.id}/payments`, { json: installment, headers: auth }),
    );
    conforms(installmentPath, 'post', await request('post', installments, { json: { amount: '1' }, headers: auth }));

    const invoiceId = payment.invoices[0]!.id;
    conforms('/v1/invoices', 'get', await request('get', '/v1/invoices?status=pending', { headers: auth }));
    conforms('/v1/invoices', 'get', await request('get', '/v1/invoices?status=nope', { headers: auth }));
    // The console's search: serie-folio, the customer, a window of creation (a receptor on each row).
    const since = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
    const searched = await request(
      'get',
      `/v1/invoices?serieFolio=${payment.invoices[0]!.serieFolio}&createdFrom=${since}&createdTo=2099-01-01T00:00:00-06:00`,
      { headers: auth },
    );
    expect(JSON.parse(String(searched.body))).toMatchObject({
      data: [{ serieFolio: payment.invoices[0]!.serieFolio }],
    });
    conforms('/v1/invoices', 'get', searched);
    conforms('/v1/invoices', 'get', await request('get', '/v1/invoices?rfc=CACX7605101P8', { headers: auth }));
    const badSearch = await request('get', '/v1/invoices?serieFolio=A12&rfc=x&createdFrom=yesterday', {
      headers: auth,
    });
    const refused = JSON.parse(String(badSearch.body)) as { error: { details: { path: string }[] } };
    expect(refused.error.details.map((d) => d.path)).toEqual(['serieFolio', 'rfc', 'createdFrom']);
    conforms('/v1/invoices', 'get', badSearch);
    conforms('/v1/invoices/{id}', 'get', await request('get', `/v1/invoices/${invoiceId}`, { headers: auth }));
    conforms('/v1/invoices/{id}/xml', 'get', await request('get', `/v1/invoices/${invoiceId}/xml`, { headers: auth }));
    // Pending: 409 not_stamped (the 200 with a PDF is pdf.test.ts's).
    conforms('/v1/invoices/{id}/pdf', 'get', await request('get', `/v1/invoices/${invoiceId}/pdf`, { headers: auth }));
    conforms('/v1/invoices/{id}/zip', 'get', await request('get', `/v1/invoices/${invoiceId}/zip`, { headers: auth }));
    const emailPath = '/v1/invoices/{id}/email';
    conforms(emailPath, 'post', await request('post', `/v1/invoices/${invoiceId}/email`, { json: {}, headers: auth }));
    conforms(
      emailPath,
      'post',
      await request('post', `/v1/invoices/${invoiceId}/email`, { json: { to: 'no' }, headers: auth }),
    );

    const cancelPath = '/v1/invoices/{id}/cancel';
    conforms(
      cancelPath,
      'post',
      await request('post', `/v1/invoices/${invoiceId}/cancel`, { json: { motivo: '02' }, headers: auth }),
    );
    conforms(
      cancelPath,
      'post',
      await request('post', `/v1/invoices/${invoiceId}/cancel`, { json: { motivo: '01' }, headers: auth }),
    );
    conforms(
      cancelPath,
      'post',
      await request('post', `/v1/invoices/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}/cancel`, {
        json: { motivo: '02' },
        headers: auth,
      }),
    );
    const stampedId = (
      await api.prisma.invoice.create({
        data: {
          organizationId: (await api.prisma.emisor.findFirstOrThrow()).id,
          kind: 'I',
          serie: 'OA',
          folio: 1,
          moneda: 'MXN',
          subTotal: '100.00',
          total: '116.00',
          status: 'pending',
          uuid: '11111111-2222-4333-8444-555555555555',
          stampKey: 'oa-stamped',
        },
      })
    ).id;
    await walkInvoiceTo(api.prisma, stampedId, 'stamped');
    const cancelled = await request('post', `/v1/invoices/${stampedId}/cancel`, {
      json: { motivo: '02' },
      headers: auth,
    });
    expect(cancelled.statusCode).toBe(202);
    conforms(cancelPath, 'post', cancelled);
    conforms('/v1/invoices/{id}', 'get', await request('get', `/v1/invoices/${stampedId}`, { headers: auth }));
    const acusePath = '/v1/invoices/{id}/cancellations/{cancelId}/acuse';
    const cancelId = (JSON.parse(cancelled.body) as { id: string }).id;
    const acuseUrl = `/v1/invoices/${stampedId}/cancellations/${cancelId}/acuse`;
    conforms(acusePath, 'get', await request('get', acuseUrl, { headers: auth }));
    await api.prisma.cancelRequest.update({ where: { id: cancelId }, data: { acuse: '<Acuse/>' } });
    conforms(acusePath, 'get', await request('get', acuseUrl, { headers: auth }));

    // Corrections: a pending invoice inside its window (409), a stamped one (409), a bad body (422),
    // and the versions view.
    const correctPath = '/v1/invoices/{id}';
    conforms(
      correctPath,
      'patch',
      await request('patch', `/v1/invoices/${invoiceId}`, { json: { receptor: { usoCfdi: 'G01' } }, headers: auth }),
    );
    conforms(
      correctPath,
      'patch',
      await request('patch', `/v1/invoices/${stampedId}`, { json: { reason: 'x' }, headers: auth }),
    );
    conforms(
      correctPath,
      'patch',
      await request('patch', `/v1/invoices/${invoiceId}`, { json: { colour: 'blue' }, headers: auth }),
    );
    conforms(
      '/v1/invoices/{id}/replace',
      'post',
      await request('post', `/v1/invoices/${invoiceId}/replace`, { json: { reason: 'x' }, headers: auth }),
    );
    conforms(
      '/v1/invoices/{id}/versions',
      'get',
      await request('get', `/v1/invoices/${invoiceId}/versions`, { headers: auth }),
    );

    const outboxId = (await api.prisma.outboxRow.findFirstOrThrow({ where: { invoiceId } })).id;
    conforms('/v1/outbox/{id}/retry', 'post', await request('post', `/v1/outbox/${outboxId}/retry`, { headers: auth }));
    conforms(
      '/v1/outbox/{id}/retry',
      'post',
      await request('post', `/v1/outbox/${outboxId}/retry`, { headers: { authorization: `Bearer ${KEYS.admin}` } }),
    );
    await api.prisma.outboxRow.update({ where: { id: outboxId }, data: { status: 'failed' } });
    await api.prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamp_failed' } });
    conforms(
      '/v1/outbox/{id}/retry',
      'post',
      await request('post', `/v1/outbox/${outboxId}/retry`, { headers: { authorization: `Bearer ${KEYS.admin}` } }),
    );

    // Products and customers: created, refused, listed, read, changed.
    const product = await request('post', '/v1/products', {
      json: {
        reference: 'OA-P1',
        descripcion: 'Audífonos',
        claveProdServ: '52161514',
        claveUnidad: 'H87',
        unitPrice: '580',
      },
      headers: auth,
    });
    expect(product.statusCode).toBe(201);
    conforms('/v1/products', 'post', product);
    conforms(
      '/v1/products',
      'post',
      await request('post', '/v1/products', {
        json: { reference: 'OA-P1', descripcion: 'x', claveProdServ: '52161514', claveUnidad: 'H87' },
        headers: auth,
      }),
    );
    conforms(
      '/v1/products',
      'post',
      await request('post', '/v1/products', { json: { reference: 'OA-P2', claveUnidad: 'ZZZ' }, headers: auth }),
    );
    conforms('/v1/products', 'post', await request('post', '/v1/products', { json: {} }));
    conforms('/v1/products', 'get', await request('get', '/v1/products?reference=OA-P1', { headers: auth }));
    conforms('/v1/products', 'get', await request('get', '/v1/products?limit=x', { headers: auth }));
    const productId = (JSON.parse(product.body) as { id: string }).id;
    const unknown = `${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}`;
    conforms('/v1/products/{id}', 'get', await request('get', `/v1/products/${productId}`, { headers: auth }));
    conforms('/v1/products/{id}', 'get', await request('get', `/v1/products/${unknown}`, { headers: auth }));
    conforms(
      '/v1/products/{id}',
      'patch',
      await request('patch', `/v1/products/${productId}`, { json: { unitPrice: null }, headers: auth }),
    );
    conforms(
      '/v1/products/{id}',
      'patch',
      await request('patch', `/v1/products/${unknown}`, { json: { active: false }, headers: auth }),
    );
    conforms(
      '/v1/products/{id}',
      'patch',
      await request('patch', `/v1/products/${productId}`, { json: { taxes: { iva: '17' } }, headers: auth }),
    );
    const customerBody = { ...body.receptor, stripeCustomerId: 'cus_openapi1' };
    const customer = await request('post', '/v1/customers', { json: customerBody, headers: auth });
    expect(customer.statusCode).toBe(201);
    conforms('/v1/customers', 'post', customer);
    conforms('/v1/customers', 'post', await request('post', '/v1/customers', { json: customerBody, headers: auth }));
    conforms(
      '/v1/customers',
      'post',
      await request('post', '/v1/customers', { json: { ...body.receptor, rfc: 'CACX7605101P9' }, headers: auth }),
    );
    conforms('/v1/customers', 'post', await request('post', '/v1/customers', { json: customerBody }));
    conforms('/v1/customers', 'get', await request('get', '/v1/customers?rfc=CACX7605101P8', { headers: auth }));
    conforms('/v1/customers', 'get', await request('get', '/v1/customers?limit=0', { headers: auth }));
    const customerId = (JSON.parse(customer.body) as { id: string }).id;
    conforms('/v1/customers/{id}', 'get', await request('get', `/v1/customers/${customerId}`, { headers: auth }));
    conforms('/v1/customers/{id}', 'get', await request('get', `/v1/customers/${unknown}`, { headers: auth }));
    conforms(
      '/v1/customers/{id}',
      'patch',
      await request('patch', `/v1/customers/${customerId}`, { json: { email: 'pagos@example.mx' }, headers: auth }),
    );
    conforms(
      '/v1/customers/{id}',
      'patch',
      await request('patch', `/v1/customers/${customerId}`, { json: { regimenFiscal: '601' }, headers: auth }),
    );
    conforms(
      '/v1/customers/{id}',
      'patch',
      await request('patch', `/v1/customers/${unknown}`, { json: { nombre: 'X' }, headers: auth }),
    );
    const taken = await request('post', '/v1/customers', {
      json: { ...body.receptor, stripeCustomerId: 'cus_openapi2' },
      headers: auth,
    });
    conforms(
      '/v1/customers/{id}',
      'patch',
      await request('patch', `/v1/customers/${(JSON.parse(taken.body) as { id: string }).id}`, {
        json: { stripeCustomerId: 'cus_openapi1' },
        headers: auth,
      }),
    );
    // A sale of the product to the customer, with lines; and one whose lines do not add up.
    const sale = await request('post', '/v1/payments', {
      json: {
        externalId: 'OPENAPI-LINES',
        amount: '1216.00',
        currency: 'MXN',
        occurredAt: body.occurredAt,
        customerId,
        conceptos: [
          { product: 'OA-P1', cantidad: '2', amount: '1160.00' },
          { descripcion: 'Leche', amount: '56.00', taxes: { iva: '0' } },
        ],
      },
      headers: auth,
    });
    expect(sale.statusCode).toBe(201);
    conforms('/v1/payments', 'post', sale);
    conforms(
      '/v1/payments',
      'post',
      await request('post', '/v1/payments', {
        json: { ...body, externalId: 'OPENAPI-MISMATCH', conceptos: [{ descripcion: 'A', amount: '1.00' }] },
        headers: auth,
      }),
    );
    conforms(
      refundPath,
      'post',
      await request('post', `/v1/payments/${(JSON.parse(sale.body) as { id: string }).id}/refunds`, {
        json: { amount: '28.00', externalId: 'oa-line', lines: [{ line: 1, amount: '28.00' }] },
        headers: auth,
      }),
    );

    // API keys: made (and refused to a key without admin), listed, revoked; any key about itself.
    const admin = { authorization: `Bearer ${KEYS.admin}` };
    const key = await request('post', '/v1/keys', { json: { name: 'oa-key', scopes: ['read'] }, headers: admin });
    expect(key.statusCode).toBe(201);
    conforms('/v1/keys', 'post', key);
    conforms('/v1/keys', 'post', await request('post', '/v1/keys', { json: { name: 'oa-key' }, headers: admin }));
    conforms('/v1/keys', 'post', await request('post', '/v1/keys', { json: { name: 'x y' }, headers: admin }));
    conforms('/v1/keys', 'post', await request('post', '/v1/keys', { json: { name: 'oa-2' }, headers: auth }));
    conforms('/v1/keys', 'post', await request('post', '/v1/keys', { json: { name: 'oa-3' } }));
    conforms('/v1/keys', 'get', await request('get', '/v1/keys', { headers: admin }));
    conforms('/v1/keys', 'get', await request('get', '/v1/keys', { headers: auth }));
    conforms('/v1/keys', 'get', await request('get', '/v1/keys'));
    conforms('/v1/keys/me', 'get', await request('get', '/v1/keys/me', { headers: auth }));
    conforms('/v1/keys/me', 'get', await request('get', '/v1/keys/me'));
    conforms('/v1/keys/me', 'get', await request('get', '/v1/keys/me?x=1', { headers: auth }));
    const keyId = (JSON.parse(key.body) as { id: string }).id;
    conforms('/v1/keys/{id}/revoke', 'post', await request('post', `/v1/keys/${keyId}/revoke`, { headers: admin }));
    conforms('/v1/keys/{id}/revoke', 'post', await request('post', `/v1/keys/${unknown}/revoke`, { headers: admin }));
    conforms('/v1/keys/{id}/revoke', 'post', await request('post', `/v1/keys/${keyId}/revoke`, { headers: auth }));
    conforms('/v1/keys/{id}/revoke', 'post', await request('post', `/v1/keys/${keyId}/revoke`));

    const endpoints = '/v1/webhook-endpoints';
    const endpoint = await request('post', endpoints, {
      json: { url: 'https://erp.example.com/hook', events: ['*'] },
      headers: admin,
    });
    conforms(endpoints, 'post', endpoint);
    conforms(
      endpoints,
      'post',
      await request('post', endpoints, { json: { url: 'ftp://x', events: ['*'] }, headers: admin }),
    );
    conforms(
      endpoints,
      'post',
      await request('post', endpoints, { json: { url: 'https://x.example', events: ['*'] }, headers: auth }),
    );
    conforms(endpoints, 'get', await request('get', endpoints, { headers: admin }));
    conforms(endpoints, 'get', await request('get', `${endpoints}?limit=0`, { headers: admin }));
    const endpointId = (JSON.parse(endpoint.body) as { id: string }).id;
    const onePath = '/v1/webhook-endpoints/{id}';
    conforms(onePath, 'get', await request('get', `${endpoints}/${endpointId}`, { headers: admin }));
    conforms(onePath, 'get', await request('get', `${endpoints}/${unknown}`, { headers: admin }));
    conforms(
      onePath,
      'patch',
      await request('patch', `${endpoints}/${endpointId}`, { json: { description: 'ERP' }, headers: admin }),
    );
    conforms(onePath, 'patch', await request('patch', `${endpoints}/${endpointId}`, { json: {}, headers: admin }));
    await request('post', '/v1/payments', {
      json: {
        externalId: 'OPENAPI-HOOK',
        amount: '1.16',
        currency: 'MXN',
        occurredAt: new Date(Date.now() - 60_000).toISOString(),
      },
      headers: auth,
    });
    const rotatePath = '/v1/webhook-endpoints/{id}/rotate-secret';
    conforms(
      rotatePath,
      'post',
      await request('post', `${endpoints}/${endpointId}/rotate-secret`, { json: {}, headers: admin }),
    );
    conforms(
      rotatePath,
      'post',
      await request('post', `${endpoints}/${endpointId}/rotate-secret`, { json: { graceHours: 999 }, headers: admin }),
    );
    conforms(
      rotatePath,
      'post',
      await request('post', `${endpoints}/${unknown}/rotate-secret`, { json: {}, headers: admin }),
    );
    conforms(
      rotatePath,
      'post',
      await request('post', `${endpoints}/${endpointId}/rotate-secret`, { json: {}, headers: auth }),
    );
    const log = await request('get', `${endpoints}/${endpointId}/deliveries`, { headers: admin });
    conforms('/v1/webhook-endpoints/{id}/deliveries', 'get', log);
    conforms(
      '/v1/webhook-endpoints/{id}/deliveries',
      'get',
      await request('get', `${endpoints}/${unknown}/deliveries`, { headers: admin }),
    );
    const deliveryId = (JSON.parse(log.body) as { data: { id: string }[] }).data[0]!.id;
    conforms(
      '/v1/deliveries',
      'get',
      await request('get', `/v1/deliveries?endpointId=${endpointId}`, { headers: auth }),
    );
    conforms('/v1/deliveries', 'get', await request('get', '/v1/deliveries?status=lost', { headers: auth }));
    conforms('/v1/deliveries/{id}', 'get', await request('get', `/v1/deliveries/${deliveryId}`, { headers: auth }));
    conforms('/v1/deliveries/{id}', 'get', await request('get', `/v1/deliveries/${unknown}`, { headers: auth }));
    const eventList = await request('get', `/v1/events?type=invoice.stamped`, { headers: auth });
    conforms('/v1/events', 'get', eventList);
    const eventId = (JSON.parse(eventList.body) as { data: { id: string }[] }).data[0]!.id;
    conforms('/v1/events', 'get', await request('get', '/v1/events?type=invoice.lost', { headers: auth }));
    conforms('/v1/events/{id}', 'get', await request('get', `/v1/events/${eventId}`, { headers: auth }));
    conforms('/v1/events/{id}', 'get', await request('get', `/v1/events/${unknown}`, { headers: auth }));
    const testPath = '/v1/webhook-endpoints/{id}/test';
    const tested = await request('post', `${endpoints}/${endpointId}/test`, { json: {}, headers: admin });
    expect(tested.statusCode).toBe(202);
    conforms(testPath, 'post', tested);
    conforms(testPath, 'post', await request('post', `${endpoints}/${unknown}/test`, { json: {}, headers: admin }));
    const replayPath = '/v1/deliveries/{id}/replay';
    conforms(
      replayPath,
      'post',
      await request('post', `/v1/deliveries/${deliveryId}/replay`, { json: {}, headers: auth }),
    );
    await request('patch', `${endpoints}/${endpointId}`, { json: { status: 'disabled' }, headers: admin });
    conforms(
      replayPath,
      'post',
      await request('post', `/v1/deliveries/${deliveryId}/replay`, { json: {}, headers: auth }),
    );
    conforms(
      replayPath,
      'post',
      await request('post', `/v1/deliveries/${unknown}/replay`, { json: {}, headers: auth }),
    );

    const events = '/v1/webhook-events';
    conforms(events, 'get', await request('get', `${events}?result=failed`, { headers: auth }));
    conforms(events, 'get', await request('get', `${events}?result=nope`, { headers: admin }));
    conforms(events, 'get', await request('get', `${events}?limit=1`, { headers: admin }));

    const delivery = stripeDelivery(paymentIntentSucceeded());
    const stripe = (signature: string) =>
      request('post', '/webhooks/stripe', {
        body: delivery.body,
        headers: { 'content-type': 'application/json', 'stripe-signature': signature },
      });
    conforms('/webhooks/stripe', 'post', await stripe(delivery.signature));
    conforms(
      '/webhooks/stripe',
      'post',
      await stripe(delivery.signature.replace(/v1=(.)/, (_, c: string) => `v1=${c === '0' ? '1' : '0'}`)),
    );
    conforms(
      '/webhooks/mercadopago',
      'post',
      await request('post', '/webhooks/mercadopago?data.id=1&type=payment', {
        json: { type: 'payment', data: { id: '1' } },
        headers: { 'x-signature': 'ts=1,v1=00', 'x-request-id': 'r' },
      }),
    );

    // Público en general: per-payment mode answers 409; global mode, the tickets and their globals.
    conforms('/v1/tickets', 'get', await request('get', '/v1/tickets', { headers: auth }));
    const global = await startApi({ global: { maxConceptosPerGlobal: 100 } });
    try {
      const on = (method: 'get' | 'post', url: string, options: OptionsOfTextResponseBody = {}) =>
        got(`${global.url}${url}`, { ...options, method, throwHttpErrors: false });
      const sale = await on('post', '/v1/payments', {
        json: { externalId: 'OPENAPI-T-1', amount: '116.00', currency: 'MXN', occurredAt: body.occurredAt },
        headers: { ...auth, 'idempotency-key': 'oa-t-1' },
      });
      expect([sale.statusCode, sale.body]).toEqual([201, expect.anything()]);
      conforms('/v1/payments', 'post', sale);
      const { id: saleId, ticket } = JSON.parse(sale.body) as { id: string; ticket: { id: string; period: string } };
      conforms('/v1/payments/{id}', 'get', await on('get', `/v1/payments/${saleId}`, { headers: auth }));
      const ticketRefund = await on('post', `/v1/payments/${saleId}/refunds`, {
        json: { amount: '16.00' },
        headers: { ...auth, 'idempotency-key': 'oa-t-r1' },
      });
      expect(ticketRefund.statusCode).toBe(201);
      conforms('/v1/payments/{id}/refunds', 'post', ticketRefund);
      conforms('/v1/tickets', 'get', await on('get', '/v1/tickets?status=open', { headers: auth }));
      conforms('/v1/tickets', 'get', await on('get', '/v1/tickets?status=nope', { headers: auth }));
      conforms('/v1/tickets/{id}', 'get', await on('get', `/v1/tickets/${ticket.id}`, { headers: auth }));
      conforms('/v1/tickets/{id}', 'get', await on('get', `/v1/tickets/${unknown}`, { headers: auth }));
      const issue = (key: Record<string, string>, startsOn: string) =>
        on('post', '/v1/globals', { json: { startsOn }, headers: { ...key, 'idempotency-key': randomUUID() } });
      conforms('/v1/globals', 'post', await issue(auth, ticket.period));
      const issued = await issue(admin, ticket.period);
      expect(issued.statusCode).toBe(201);
      conforms('/v1/globals', 'post', issued);
      conforms('/v1/globals', 'post', await issue(admin, ticket.period));
      conforms('/v1/globals', 'post', await issue(admin, 'not-a-day'));
      conforms('/v1/globals', 'get', await on('get', '/v1/globals', { headers: auth }));
      const periodId = (JSON.parse(issued.body) as { periodId: string }).periodId;
      conforms('/v1/globals/{id}', 'get', await on('get', `/v1/globals/${periodId}`, { headers: auth }));
      conforms('/v1/globals/{id}', 'get', await on('get', `/v1/globals/${unknown}`, { headers: auth }));
    } finally {
      await global.close();
    }

    conforms('/healthz', 'get', await request('get', '/healthz'));
    conforms('/readyz', 'get', await request('get', '/readyz'));
    // Platform mode off (no PLATFORM_KEY): 404 platform_mode_off.
    conforms('/v1/organizations', 'get', await request('get', '/v1/organizations', { headers: auth }));
  });

  it("describes platform mode's operations: organizations and their own provider paths", async () => {
    const platformKey = `tk_platform_${randomBytes(24).toString('base64url')}`;
    const vault = LocalKeyVault.fromFile(`test:${randomBytes(32).toString('base64')}`);
    const platform = await startApi({ platform: { key: platformKey, vault } });
    const on = (
      method: 'get' | 'post' | 'patch' | 'put' | 'delete',
      url: string,
      options: OptionsOfTextResponseBody = {},
    ) => got(`${platform.url}${url}`, { ...options, method, throwHttpErrors: false });
    const pk = { authorization: `Bearer ${platformKey}` };
    const unknown = randomUUID();
    try {
      const facts = {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '612',
        lugarExpedicion: '36257',
      };
      const make = (json: object, headers = pk) => on('post', '/v1/organizations', { json, headers });
      const made = await make(facts);
      expect(made.statusCode).toBe(201);
      for (const answer of [made, await make(facts), await make({ ...facts, nombre: 'X' }), await make({ rfc: 'X' })])
        conforms('/v1/organizations', 'post', answer);
      conforms('/v1/organizations', 'post', await make(facts, auth));
      conforms('/v1/organizations', 'get', await on('get', '/v1/organizations?limit=1', { headers: pk }));
      conforms('/v1/organizations', 'get', await on('get', '/v1/organizations?limit=0', { headers: pk }));
      const id = (JSON.parse(made.body) as { id: string }).id;
      const one = `/v1/organizations/${id}`;
      conforms('/v1/organizations/{id}', 'get', await on('get', one, { headers: pk }));
      conforms('/v1/organizations/{id}', 'get', await on('get', `/v1/organizations/${unknown}`, { headers: pk }));
      const settings = {
        series: { ingreso: 'OA' },
        publicoGeneral: { mode: 'global' },
        concepto: { descripcion: null },
      };
      const patched = await on('patch', one, { json: { settings }, headers: pk });
      expect(patched.statusCode).toBe(200);
      conforms('/v1/organizations/{id}', 'patch', patched);
      conforms(
        '/v1/organizations/{id}',
        'patch',
        await on('patch', one, { json: { settings: { x: 1 } }, headers: pk }),
      );
      const key = await on('post', `${one}/keys`, { json: { name: 'pos' }, headers: pk });
      expect(key.statusCode).toBe(201);
      conforms('/v1/organizations/{id}/keys', 'post', key);
      conforms(
        '/v1/organizations/{id}/keys',
        'post',
        await on('post', `${one}/keys`, { json: { name: 'pos' }, headers: pk }),
      );
      const twin = await on('post', `${one}/test`, { headers: pk });
      expect(twin.statusCode).toBe(201);
      conforms('/v1/organizations/{id}/test', 'post', twin);
      conforms('/v1/organizations/{id}/test', 'post', await on('post', `${one}/test`, { headers: pk }));
      const twinId = (JSON.parse(String(twin.body)) as { id: string }).id;
      conforms(
        '/v1/organizations/{id}/test',
        'post',
        await on('post', `/v1/organizations/${twinId}/test`, { headers: pk }),
      );
      conforms('/v1/organizations/{id}', 'get', await on('get', `/v1/organizations/${twinId}`, { headers: pk }));
      const f = testCsdFiles('CACX7605101P8');
      const upload = {
        certificate: Buffer.from(f.cer).toString('base64'),
        privateKey: Buffer.from(f.key).toString('base64'),
        password: f.password,
      };
      const csd = await on('post', `${one}/csds`, { json: upload, headers: pk });
      expect(csd.statusCode).toBe(201);
      conforms('/v1/organizations/{id}/csds', 'post', csd);
      conforms('/v1/organizations/{id}/csds', 'post', await on('post', `${one}/csds`, { json: upload, headers: pk }));
      conforms(
        '/v1/organizations/{id}/csds',
        'post',
        await on('post', `${one}/csds`, { json: { ...upload, password: 'mala' }, headers: pk }),
      );
      const fiel = testEfirmaFor('CACX7605101P8', 'XOCHILT CASAS CHAVEZ');
      const efirma = {
        certificate: fiel.cer.toString('base64'),
        privateKey: fiel.key.toString('base64'),
        password: fiel.password,
      };
      const stored = await on('post', `${one}/efirmas`, { json: efirma, headers: pk });
      expect(stored.statusCode).toBe(201);
      conforms('/v1/organizations/{id}/efirmas', 'post', stored);
      for (const [where, json] of [
        [one, efirma],
        [one, upload],
        [`/v1/organizations/${twinId}`, efirma],
      ] as const)
        conforms('/v1/organizations/{id}/efirmas', 'post', await on('post', `${where}/efirmas`, { json, headers: pk }));

      const logo = (body: Buffer, type: string) =>
        on('put', `${one}/logo`, { body, headers: { ...pk, 'content-type': type } });
      const png = TINY_PNG;
      for (const answer of [
        await logo(png, 'image/png'),
        await logo(Buffer.from('not an image'), 'image/png'),
        await logo(png, 'text/plain'),
      ])
        conforms('/v1/organizations/{id}/logo', 'put', answer);
      conforms('/v1/organizations/{id}/logo', 'delete', await on('delete', `${one}/logo`, { headers: pk }));

      const account = (provider: string, json: object) =>
        on('put', `${one}/providers/${provider}`, { json, headers: pk });
      const secret = `whsec_${randomBytes(12).toString('hex')}`;
      const stripe = await account('stripe', { webhookSecret: secret, apiKey: 'sk_test_openapi_key' });
      expect(stripe.statusCode).toBe(200);
      conforms('/v1/organizations/{id}/providers/{provider}', 'put', stripe);
      conforms('/v1/organizations/{id}/providers/{provider}', 'put', await account('stripe', { webhookSecret: 'x' }));
      // Stripe Connect is off here (no STRIPE_CONNECT_*): a connected account is refused, its endpoint 503.
      conforms('/v1/organizations/{id}/providers/{provider}', 'put', await account('stripe', { account: 'acct_1X' }));
      conforms(
        '/webhooks/stripe/connect',
        'post',
        await on('post', '/webhooks/stripe/connect', {
          body: '{}',
          headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
        }),
      );
      conforms(
        '/v1/organizations/{id}/providers/{provider}',
        'delete',
        await on('delete', `${one}/providers/mercadopago`, { headers: pk }),
      );
      await account('mercadopago', { webhookSecret: 'mp-openapi-secret', apiKey: 'TEST-openapi-token' });
      conforms(
        '/v1/organizations/{id}/providers/{provider}',
        'delete',
        await on('delete', `${one}/providers/mercadopago`, { headers: pk }),
      );

      // The organization's own provider paths.
      const delivery = stripeDelivery(paymentIntentSucceeded({ amount: 11600 }), { secret });
      const toStripe = (organization: string, signature: string) =>
        on('post', `/webhooks/stripe/${organization}`, {
          body: delivery.body,
          headers: { 'content-type': 'application/json', 'stripe-signature': signature },
        });
      const taken = await toStripe(id, delivery.signature);
      expect(taken.statusCode).toBe(200);
      conforms('/webhooks/stripe/{organizationId}', 'post', taken);
      conforms(
        '/webhooks/stripe/{organizationId}',
        'post',
        await toStripe(id, stripeDelivery({ id: 'evt_x' }).signature),
      );
      conforms('/webhooks/stripe/{organizationId}', 'post', await toStripe(unknown, delivery.signature));
      conforms(
        '/webhooks/mercadopago/{organizationId}',
        'post',
        await on('post', `/webhooks/mercadopago/${id}?data.id=1&type=payment`, {
          json: { type: 'payment', data: { id: '1' } },
          headers: { 'x-signature': 'ts=1,v1=00', 'x-request-id': 'r' },
        }),
      );
    } finally {
      await platform.close();
    }
  });

  it("describes every event's webhook body in its `webhooks:` section, one per event type", async () => {
    const documented = Object.keys(doc.webhooks).sort();
    const enumTypes = (doc.components.schemas.EventType as unknown as { enum: string[] }).enum;
    expect(documented).toEqual([...enumTypes, 'endpoint.test'].sort());
    // Every event the runs above made, as the worker sends it (the events list keeps the same fields).
    const seen = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = JSON.parse(
        (await request('get', `/v1/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: auth })).body,
      ) as { data: (Record<string, unknown> & { type: string })[]; nextCursor: string | null };
      for (const { invoiceId: _i, paymentId: _p, refundId: _r, ...body } of page.data) {
        seen.add(body.type);
        const schema = doc.webhooks[body.type]!.post.requestBody.content['application/json']!.schema;
        const validate = ajv.compile({ ...schema, components: doc.components });
        const valid = validate(body);
        expect({ type: body.type, errors: valid ? null : validate.errors }).toEqual({ type: body.type, errors: null });
      }
      cursor = page.nextCursor;
    } while (cursor);
    expect([...seen].sort()).toEqual(
      expect.arrayContaining([
        'endpoint.test',
        'invoice.failed',
        'invoice.stamped',
        'payment.recorded',
        'refund.recorded',
      ]),
    );
  });

  it('names every operation once, in camelCase (the typed client names its calls after them)', () => {
    const methods = ['get', 'post', 'put', 'patch', 'delete'];
    const ids = Object.values(doc.paths).flatMap((ops) =>
      Object.entries(ops)
        .filter(([m]) => methods.includes(m))
        .map(([, op]) => (op as { operationId?: string }).operationId ?? '(none)'),
    );
    expect(ids.filter((id) => !/^[a-z][A-Za-z]+$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('calls every documented operation', () => {
    const methods = ['get', 'post', 'put', 'patch', 'delete'];
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => methods.includes(m))
        .map((m) => `${m} ${path}`),
    );
    expect(documented.filter((op) => !called.has(op))).toEqual([]);
  });
});
