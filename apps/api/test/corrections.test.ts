/**
 * PATCH /v1/invoices/:id against the API (no worker): a needs_data invoice — no PAC ever saw it — is
 * frozen at once as the invoice's first version under the serie-folio it already holds; what the
 * correction cannot do is refused with a stable code and nothing written. The proof against the PACs
 * (stamp_failed, pending past the window) is tested end to end in apps/worker/test/corrections.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { walkInvoiceTo } from '@timbra/db/testing';
import { startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true });
});
afterAll(() => api.close());

const auth = { authorization: 'Bearer pos-key-0123456789abcdef' };
const CUSTOMER = {
  rfc: 'CACX7605101P8',
  razon_social: 'XOCHILT CASAS CHAVEZ',
  regimen_fiscal: '612',
  codigo_postal: '36257',
  uso_cfdi: 'G03',
};
const patch = (id: string, json: unknown, key: string = randomUUID()) =>
  got.patch(`${api.url}/v1/invoices/${id}`, {
    json,
    headers: { ...auth, 'idempotency-key': key },
    throwHttpErrors: false,
    responseType: 'json',
  });
const ingresoOf = async (paymentIntentId: string) =>
  api.prisma.invoice.findFirstOrThrow({
    where: { kind: 'I', payment: { provider: 'stripe', externalId: paymentIntentId } },
    include: { outbox: true },
  });

describe('correcting an invoice that needs data', () => {
  it('fixes the receptor: frozen at once under the same serie-folio, its outbox row written, the payment updated', async () => {
    // Régimen 605 with UsoCFDI G03 breaks CFDI40161: the money is recorded, the invoice needs data.
    const made = await api.providers.stripePayment({
      amount: 116000,
      metadata: { ...CUSTOMER, regimen_fiscal: '605' },
    });
    const before = await ingresoOf(made.paymentIntent.id);
    expect(before).toMatchObject({ status: 'needs_data', frozenXml: null, outbox: [] });

    // Still wrong: 422 with the rule, nothing written.
    const wrong = await patch(before.id, { receptor: { usoCfdi: 'G01' } });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.body).toMatchObject({ error: { code: 'fiscal_rules_failed', details: [{ rule: 'CFDI40161' }] } });
    expect(await api.prisma.invoiceCorrection.count({ where: { invoiceId: before.id } })).toBe(0);

    const key = randomUUID();
    const fixed = await patch(before.id, { receptor: { regimenFiscal: '612' }, reason: 'régimen as registered' }, key);
    expect(fixed.statusCode).toBe(200);
    expect(fixed.body).toMatchObject({
      status: 'applied',
      fromVersion: 1,
      toVersion: 1,
      reason: 'régimen as registered',
    });
    const after = await ingresoOf(made.paymentIntent.id);
    expect(after).toMatchObject({ status: 'pending', serie: before.serie, folio: before.folio, version: 1 });
    expect(after.frozenXml).toContain('RegimenFiscalReceptor="612"');
    expect(after.frozenXml).toContain(`Folio="${before.folio}"`);
    expect(after.outbox).toEqual([expect.objectContaining({ kind: 'stamp', status: 'pending', version: 1 })]);
    const payment = await api.prisma.payment.findUniqueOrThrow({ where: { id: after.paymentId! } });
    expect(payment.receptor).toMatchObject({ regimenFiscal: '612', rfc: CUSTOMER.rfc });

    // The same request again (same key): the first answer, nothing done twice.
    const replay = await patch(before.id, { receptor: { regimenFiscal: '612' }, reason: 'régimen as registered' }, key);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await api.prisma.invoiceCorrection.count({ where: { invoiceId: before.id } })).toBe(1);

    // Pending and inside its window: nothing to correct yet.
    const early = await patch(before.id, { receptor: { usoCfdi: 'G01' } });
    expect(early.statusCode).toBe(409);
    expect(early.body).toMatchObject({ error: { code: 'not_correctable' } });

    // Stamped: a correction is a replacement now.
    await api.prisma.invoice.update({
      where: { id: before.id },
      data: { status: 'stamped', uuid: randomUUID().toUpperCase() },
    });
    const stamped = await patch(before.id, { receptor: { usoCfdi: 'G01' } });
    expect(stamped.statusCode).toBe(409);
    expect((stamped.body as { error: { message: string } }).error.message).toContain('/replace');
  });

  it('a USD payment gets its TipoCambio', async () => {
    const made = await api.providers.stripePayment({ amount: 11600, currency: 'usd', metadata: CUSTOMER });
    const before = await ingresoOf(made.paymentIntent.id);
    expect(before.status).toBe('needs_data');
    expect(JSON.stringify(before.problems)).toContain('no TipoCambio for USD');
    const fixed = await patch(before.id, { tipoCambio: '17.2345' });
    expect(fixed.statusCode).toBe(200);
    const after = await ingresoOf(made.paymentIntent.id);
    expect(after.frozenXml).toContain('Moneda="USD"');
    expect(after.frozenXml).toContain('TipoCambio="17.2345"');
  });

  it('finds what needs data: by status, by the provider’s external id, by UUID; unknown fields are refused', async () => {
    const made = await api.providers.stripePayment({ amount: 58000, metadata: { ...CUSTOMER, codigo_postal: '0100' } });
    const list = await got(`${api.url}/v1/invoices`, {
      headers: auth,
      searchParams: { status: 'needs_data', externalId: made.paymentIntent.id },
    }).json<{ data: { id: string; status: string }[] }>();
    expect(list.data).toEqual([expect.objectContaining({ status: 'needs_data' })]);
    const invoice = await ingresoOf(made.paymentIntent.id);
    // By UUID (any case): a stamped one.
    const paid = await api.providers.stripePayment({ amount: 58000, metadata: CUSTOMER });
    const stamped = await ingresoOf(paid.paymentIntent.id);
    const uuid = randomUUID().toUpperCase();
    await api.prisma.invoice.update({ where: { id: stamped.id }, data: { status: 'stamped', uuid } });
    const byUuid = await got(`${api.url}/v1/invoices`, {
      headers: auth,
      searchParams: { uuid: uuid.toLowerCase() },
    }).json<{ data: { id: string }[] }>();
    expect(byUuid.data.map((d) => d.id)).toEqual([stamped.id]);
    const unknown = await patch(invoice.id, { receptor: { colour: 'blue' } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.body).toMatchObject({ error: { code: 'validation_failed' } });
    const empty = await patch(invoice.id, {});
    expect(empty.statusCode).toBe(422);
  });

  it('an Egreso dead-lettered before any PAC processed it is rebuilt from its request: version 2 at once, still related to its Ingreso', async () => {
    const made = await api.providers.stripePayment({ amount: 116000, metadata: CUSTOMER });
    const ingreso = await ingresoOf(made.paymentIntent.id);
    const uuid = randomUUID().toUpperCase();
    await api.prisma.invoice.update({ where: { id: ingreso.id }, data: { status: 'stamped', uuid } });
    const refund = await got
      .post(`${api.url}/v1/payments/${ingreso.paymentId}/refunds`, {
        json: { amount: '116.00', externalId: `rf-${randomUUID()}` },
        headers: { ...auth, 'idempotency-key': randomUUID() },
      })
      .json<{ egreso: { id: string; status: string } }>();
    expect(refund.egreso.status).toBe('pending');
    // Dead-lettered with no PAC call recorded (e.g. every PAC refused the connection): nobody to ask.
    await walkInvoiceTo(api.prisma, refund.egreso.id, 'stamp_failed');
    const fixed = await patch(refund.egreso.id, { receptor: { usoCfdi: 'G01' } });
    expect(fixed.statusCode).toBe(200);
    expect(fixed.body).toMatchObject({ status: 'applied', fromVersion: 1, toVersion: 2 });
    const egreso = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: refund.egreso.id },
      include: { outbox: true },
    });
    expect(egreso).toMatchObject({ status: 'pending', version: 2 });
    expect(egreso.frozenXml).toContain('UsoCFDI="G01"');
    expect(egreso.frozenXml).toContain(`<cfdi:CfdiRelacionado UUID="${uuid}"/>`);
    expect(egreso.outbox).toEqual([expect.objectContaining({ status: 'pending', version: 2 })]);
    const versions = await got(`${api.url}/v1/invoices/${refund.egreso.id}/versions`, { headers: auth }).json<{
      versions: { version: number; current: boolean; supersededAt: string | null }[];
    }>();
    expect(versions.versions.map((v) => [v.version, v.current, v.supersededAt !== null])).toEqual([
      [1, false, true],
      [2, true, false],
    ]);
  });
});
