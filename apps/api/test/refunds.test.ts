import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import got from 'got';
import { checkSatRules, parseXml, SAT_TEST_TAXPAYERS } from '@timbra/cfdi-core';
import { walkInvoiceTo } from '@timbra/db/testing';
import { CFDI_XSLT, prepareSatXslt, SchemaValidator, satXslt } from '@timbra/test-support';
import { jsonPoster, KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
const schema = new SchemaValidator();
beforeAll(async () => {
  prepareSatXslt(CFDI_XSLT); // before the server: compiling blocks the first time
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const auth = { authorization: `Bearer ${KEYS.pos}` };
const recent = () => new Date(Date.now() - 60_000).toISOString();

interface RefundBody {
  id: string;
  paymentId: string;
  externalId: string;
  amount: string;
  egreso: {
    id: string;
    kind: string;
    serieFolio: string;
    folio: number;
    status: string;
    total: string;
    waitingFor?: { invoiceId: string; status: string; blocked: boolean };
  };
}

async function payment(amount = '1160.00', receptor?: object) {
  const res = await got
    .post(`${api.url}/v1/payments`, {
      json: {
        externalId: `R-${randomUUID()}`,
        amount,
        currency: 'MXN',
        occurredAt: recent(),
        ...(receptor ? { receptor } : {}),
      },
      headers: auth,
    })
    .json<{ id: string; invoices: { id: string }[] }>();
  return { paymentId: res.id, ingresoId: res.invoices[0]!.id };
}

const post = jsonPoster(() => api);
const refund = (paymentId: string, body: object, headers: Record<string, string> = {}) =>
  post(`/v1/payments/${paymentId}/refunds`, body, headers);

/** What the worker does when the PAC answers: the Ingreso stamped with this UUID. */
async function stamp(invoiceId: string, status: 'stamped' | 'stamp_failed' = 'stamped') {
  const uuid = randomUUID().toUpperCase();
  await api.prisma.invoice.update({
    where: { id: invoiceId },
    data: { status, uuid: status === 'stamped' ? uuid : null },
  });
  return uuid;
}

const nextFolio = async (serie: string) => (await api.prisma.serie.findFirstOrThrow({ where: { serie } })).nextFolio;

describe('POST /v1/payments/:id/refunds', () => {
  it('before the Ingreso is stamped: the Egreso waits (no outbox row), holding its folio; a replay with the Idempotency-Key answers the same', async () => {
    const { paymentId, ingresoId } = await payment();
    const folio = await nextFolio('NC');
    const key = { 'idempotency-key': `refund-${randomUUID()}` };
    const first = await refund(paymentId, { amount: '116.00' }, key);
    expect(first.statusCode).toBe(201);
    const body = first.body as RefundBody;
    expect(body).toMatchObject({
      paymentId,
      amount: '116.00',
      egreso: {
        kind: 'E',
        serieFolio: `NC-${folio}`,
        status: 'waiting',
        total: '116.00',
        waitingFor: { invoiceId: ingresoId, status: 'pending', blocked: false },
      },
    });
    const egreso = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: body.egreso.id },
      include: { outbox: true },
    });
    expect(egreso).toMatchObject({ relatedInvoiceId: ingresoId, paymentId, frozenXml: null });
    expect(egreso.outbox).toHaveLength(0);

    const replay = await refund(paymentId, { amount: '116.00' }, key);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expect(await api.prisma.refund.count({ where: { paymentId } })).toBe(1);
    expect(await nextFolio('NC')).toBe(folio + 1);
  });

  it("after the Ingreso is stamped: the Egreso is frozen now, related to its UUID (TipoRelacion 01), XSD-valid, its cadena the SAT XSLT's", async () => {
    const { paymentId, ingresoId } = await payment('1160.00', {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      codigoPostal: '36257',
      usoCfdi: 'G03',
    });
    const uuid = await stamp(ingresoId);
    const res = await refund(paymentId, { amount: '580.00', externalId: 'rf-after-stamp' });
    expect(res.statusCode).toBe(201);
    const body = res.body as RefundBody;
    expect(body.egreso).toMatchObject({ status: 'pending', total: '580.00' });
    expect(body.egreso.waitingFor).toBeUndefined();
    const egreso = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: body.egreso.id },
      include: { outbox: true },
    });
    expect(egreso.outbox).toMatchObject([{ kind: 'stamp', status: 'pending', stampKey: egreso.stampKey }]);
    const xml = egreso.frozenXml!;
    expect(xml).toContain('TipoDeComprobante="E"');
    expect(xml).not.toContain('rf-after-stamp'); // the refund's id is not the customer's to read
    expect(xml).toContain(`<cfdi:CfdiRelacionados TipoRelacion="01"><cfdi:CfdiRelacionado UUID="${uuid}"/>`);
    expect(xml).toContain('Rfc="CACX7605101P8"');
    expect(xml).toContain('UsoCFDI="G02"');
    expect(xml).toContain('ClaveProdServ="84111506"');
    expect(xml).toContain('SubTotal="500.00"');
    expect(xml).toContain('Total="580.00"');
    expect(await schema.validate([xml])).toEqual([]);
    expect(satXslt(CFDI_XSLT, [xml])).toBe(egreso.cadenaOriginal);
  });

  it('a refund to a salaried customer (605, UsoCFDI D10): the Egreso says S01, as c_UsoCFDI allows (G02 is not), and is frozen', async () => {
    const { paymentId, ingresoId } = await payment('1160.00', {
      rfc: 'CACX7605101P8',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '605',
      codigoPostal: '36257',
      usoCfdi: 'D10',
    });
    expect((await api.prisma.invoice.findUniqueOrThrow({ where: { id: ingresoId } })).status).toBe('pending');
    await stamp(ingresoId);
    const res = await refund(paymentId, { amount: '116.00', externalId: 'rf-605' });
    const body = res.body as RefundBody;
    expect(body.egreso).toMatchObject({ status: 'pending', total: '116.00' });
    const egreso = await api.prisma.invoice.findUniqueOrThrow({ where: { id: body.egreso.id } });
    expect(egreso.frozenXml).toContain('RegimenFiscalReceptor="605" UsoCFDI="S01"');
    expect(await schema.validate([egreso.frozenXml!])).toEqual([]);
    // Every SAT rule, including the receptor checks against the taxpayer list (as registered).
    const registered = { taxpayer: (rfc: string) => SAT_TEST_TAXPAYERS.find((t) => t.rfc === rfc) };
    expect(checkSatRules(parseXml(egreso.frozenXml!), { ...registered })).toEqual([]);
  });

  it('a customer whose UsoCFDI its régimen does not allow (605 with G03): the REST payment is refused with CFDI40161, nothing stored', async () => {
    const externalId = `R-${randomUUID()}`;
    const res = await post('/v1/payments', {
      externalId,
      amount: '1160.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '605',
        codigoPostal: '36257',
        usoCfdi: 'G03',
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toMatchObject({
      error: {
        code: 'fiscal_rules_failed',
        details: [{ rule: 'CFDI40161', path: '/cfdi:Comprobante/cfdi:Receptor/@UsoCFDI' }],
      },
    });
    expect(await api.prisma.payment.count({ where: { externalId } })).toBe(0);
  });

  it('two partial refunds → two Egresos with consecutive folios; a third beyond the payment → 422, nothing written', async () => {
    const { paymentId } = await payment('1160.00');
    const folio = await nextFolio('NC');
    const a = await refund(paymentId, { amount: '500.00' });
    const b = await refund(paymentId, { amount: '600.00' });
    expect([a.statusCode, b.statusCode]).toEqual([201, 201]);
    expect([(a.body as RefundBody).egreso.folio, (b.body as RefundBody).egreso.folio]).toEqual([folio, folio + 1]);
    const over = await refund(paymentId, { amount: '60.01' });
    expect(over.statusCode).toBe(422);
    expect(over.body).toMatchObject({
      error: {
        code: 'refund_exceeds_payment',
        details: [{ path: 'amount', message: expect.stringContaining('at most 60.00 more') }],
      },
    });
    expect(await api.prisma.refund.count({ where: { paymentId } })).toBe(2);
    expect(await api.prisma.invoice.count({ where: { paymentId, kind: 'E' } })).toBe(2);
    expect(await nextFolio('NC')).toBe(folio + 2);
    expect((await refund(paymentId, { amount: '60.00' })).statusCode).toBe(201);
  });

  it('concurrent refunds never add up to more than the payment, and their folios stay gapless', async () => {
    const { paymentId } = await payment('1000.00');
    const folio = await nextFolio('NC');
    const results = await Promise.all(Array.from({ length: 10 }, () => refund(paymentId, { amount: '300.00' })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 201, 201, 422, 422, 422, 422, 422, 422, 422]);
    const folios = results.flatMap((r) => (r.statusCode === 201 ? [(r.body as RefundBody).egreso.folio] : []));
    expect(folios.sort((x, y) => x - y)).toEqual([folio, folio + 1, folio + 2]);
    expect(await nextFolio('NC')).toBe(folio + 3);
  });

  it('8 concurrent refunds of a payment not stamped yet, repeated: every one recorded, no deadlock reaches a client', async () => {
    for (let round = 0; round < 5; round++) {
      const { paymentId } = await payment('1000.00');
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          refund(paymentId, { amount: '100.00' }, { 'idempotency-key': `deadlock-${round}-${i}-${paymentId}` }),
        ),
      );
      expect(results.map((r) => r.statusCode)).toEqual(Array.from({ length: 8 }, () => 201));
      const egresos = await api.prisma.invoice.findMany({ where: { paymentId, kind: 'E' } });
      expect(egresos).toHaveLength(8);
    }
  });

  it('a refund of a payment whose Ingreso is cancelled → 409 invoice_cancelled, nothing written', async () => {
    const { paymentId, ingresoId } = await payment();
    await stamp(ingresoId);
    await walkInvoiceTo(api.prisma, ingresoId, 'cancelled');
    const folio = await nextFolio('NC');
    const res = await refund(paymentId, { amount: '10.00', externalId: 'rf-after-cancel' });
    expect(res.statusCode).toBe(409);
    expect(res.body).toMatchObject({ error: { code: 'invoice_cancelled' } });
    expect(await api.prisma.refund.count({ where: { paymentId } })).toBe(0);
    expect(await nextFolio('NC')).toBe(folio);
  });

  it('reports an Egreso that waits for a dead-lettered Ingreso (blocked)', async () => {
    const { paymentId, ingresoId } = await payment();
    await stamp(ingresoId, 'stamp_failed');
    const res = await refund(paymentId, { amount: '10.00' });
    expect(res.statusCode).toBe(201);
    expect((res.body as RefundBody).egreso).toMatchObject({
      status: 'waiting',
      waitingFor: { invoiceId: ingresoId, status: 'stamp_failed', blocked: true },
    });
  });

  it('the same refund id again: the same refund (200); with another amount: 409 refund_conflict', async () => {
    const { paymentId } = await payment();
    const first = await refund(paymentId, { amount: '10.00', externalId: 'rf-same' });
    const again = await refund(paymentId, { amount: '10.00', externalId: 'rf-same' });
    expect([first.statusCode, again.statusCode]).toEqual([201, 200]);
    expect((again.body as RefundBody).egreso.id).toBe((first.body as RefundBody).egreso.id);
    const other = await refund(paymentId, { amount: '11.00', externalId: 'rf-same' });
    expect(other.statusCode).toBe(409);
    expect(other.body).toMatchObject({ error: { code: 'refund_conflict' } });
  });

  it('a refund with neither an Idempotency-Key nor an externalId → 400 idempotency_required, nothing written (a retry would refund twice)', async () => {
    const { paymentId } = await payment();
    const before = await api.prisma.refund.count();
    const bare = await got.post(`${api.url}/v1/payments/${paymentId}/refunds`, {
      json: { amount: '10.00' },
      headers: auth,
      throwHttpErrors: false,
      responseType: 'json',
    });
    expect(bare.statusCode).toBe(400);
    expect(bare.body).toMatchObject({ error: { code: 'idempotency_required' } });
    expect(await api.prisma.refund.count()).toBe(before);
    // Its own externalId is enough: sent twice, it is one refund.
    const once = () =>
      got.post(`${api.url}/v1/payments/${paymentId}/refunds`, {
        json: { amount: '10.00', externalId: `r-${paymentId}` },
        headers: auth,
        throwHttpErrors: false,
      });
    expect([(await once()).statusCode, (await once()).statusCode]).toEqual([201, 200]);
    expect(await api.prisma.refund.count()).toBe(before + 1);
  });

  it('refuses bad input with stable codes: unknown payment 404, bad amounts and fields 422', async () => {
    const { paymentId } = await payment();
    expect((await refund(randomUUID(), { amount: '1.00' })).statusCode).toBe(404);
    expect((await refund('not-a-uuid', { amount: '1.00' })).statusCode).toBe(404);
    for (const body of [
      { amount: '0' },
      { amount: '0.00' },
      { amount: '-1.00' },
      { amount: 5 },
      { amount: '1.001' },
      { amount: 'NaN' },
      { amount: 'Infinity' },
      { amount: '1e2' },
      { amount: '1e20' },
      { amount: '100000000000000000000' },
      { amount: '1.00', occurredAt: '2099-01-01T00:00:00Z' },
      {},
      { amount: '1.00', extra: 1 },
    ]) {
      const res = await refund(paymentId, body);
      expect([JSON.stringify(body), res.statusCode]).toEqual([JSON.stringify(body), 422]);
      expect(res.body).toMatchObject({
        error: { code: 'occurredAt' in body ? 'occurred_in_future' : 'validation_failed' },
      });
    }
    expect(await api.prisma.refund.count({ where: { paymentId } })).toBe(0);
  });
});
