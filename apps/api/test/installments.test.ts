import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { BigNumber } from 'bignumber.js';
import got from 'got';
import { parseXml } from '@timbra/cfdi-core';
import { CFDI_XSLT, prepareSatXslt, SchemaValidator, satXslt } from '@timbra/test-support';
import { jsonPoster, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
const schema = new SchemaValidator();
beforeAll(async () => {
  prepareSatXslt(CFDI_XSLT); // before the server: compiling blocks the first time
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const RECEPTOR = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  regimenFiscal: '612',
  codigoPostal: '36257',
  usoCfdi: 'G03',
};

interface InstallmentBody {
  id: string;
  invoiceId: string;
  amount: string;
  numParcialidad: number;
  saldoAnterior: string;
  saldoInsoluto: string;
  pago: {
    id: string;
    kind: string;
    folio: number;
    status: string;
    waitingFor?: { invoiceId: string; status: string; blocked: boolean };
  };
}

const post = jsonPoster(() => api);

/** A sale in installments: its PPD Ingreso's id. */
async function ppdSale(amount = '11600.00') {
  const res = await post('/v1/payments', {
    externalId: `PPD-${randomUUID()}`,
    amount,
    currency: 'MXN',
    occurredAt: new Date(Date.now() - 60_000).toISOString(),
    receptor: RECEPTOR,
    paymentTerms: 'installments',
  });
  expect(res.statusCode).toBe(201);
  return (res.body as { invoices: { id: string }[] }).invoices[0]!.id;
}

const pay = (invoiceId: string, amount: string, extra: object = {}) =>
  post(`/v1/invoices/${invoiceId}/payments`, {
    amount,
    paidAt: new Date(Date.now() - 3_600_000).toISOString(),
    formaPago: '03',
    ...extra,
  });

async function stamp(invoiceId: string) {
  const uuid = randomUUID().toUpperCase();
  await api.prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamped', uuid } });
  return uuid;
}

/** The attributes of the Pago's DoctoRelacionado. */
function docto(xml: string): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (node: ReturnType<typeof parseXml>) => {
    if (node.name === 'pago20:DoctoRelacionado') Object.assign(found, Object.fromEntries(node.attrs));
    for (const child of node.children) if (child.kind === 'element') walk(child);
  };
  walk(parseXml(xml));
  return found;
}

describe('sales in installments (PPD) and their Pagos (complemento de pago 2.0)', () => {
  it('POST /v1/payments with paymentTerms installments: a PPD Ingreso (FormaPago 99)', async () => {
    const id = await ppdSale();
    const ingreso = await api.prisma.invoice.findUniqueOrThrow({ where: { id } });
    expect(ingreso.frozenXml).toContain('MetodoPago="PPD"');
    expect(ingreso.frozenXml).toContain('FormaPago="99"');
  });

  it('refuses installments without a customer, or with a FormaPago', async () => {
    const base = {
      externalId: `PPD-${randomUUID()}`,
      amount: '100.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
    };
    const noReceptor = await post('/v1/payments', { ...base, paymentTerms: 'installments' });
    expect(noReceptor.statusCode).toBe(422);
    expect(noReceptor.body).toMatchObject({ error: { code: 'validation_failed', details: [{ path: 'receptor' }] } });
    const withForma = await post('/v1/payments', {
      ...base,
      receptor: RECEPTOR,
      formaPago: '03',
      paymentTerms: 'installments',
    });
    expect(withForma.statusCode).toBe(422);
    expect(withForma.body).toMatchObject({ error: { details: [{ path: 'formaPago' }] } });
  });

  it("three installments → three Pagos, NumParcialidad 1..3, balances consistent, XSD-valid, each cadena the SAT XSLT's", async () => {
    const invoiceId = await ppdSale('11600.00');
    const uuid = await stamp(invoiceId);
    const folio = (await api.prisma.serie.findFirstOrThrow({ where: { serie: 'P' } })).nextFolio;
    const bodies: InstallmentBody[] = [];
    for (const amount of ['5800.00', '3480.00', '2320.00']) {
      const res = await pay(invoiceId, amount, { numOperacion: `SPEI-${amount}` });
      expect(res.statusCode).toBe(201);
      bodies.push(res.body as InstallmentBody);
    }
    expect(bodies.map((b) => [b.numParcialidad, b.saldoAnterior, b.amount, b.saldoInsoluto, b.pago.folio])).toEqual([
      [1, '11600.00', '5800.00', '5800.00', folio],
      [2, '5800.00', '3480.00', '2320.00', folio + 1],
      [3, '2320.00', '2320.00', '0.00', folio + 2],
    ]);
    const pagos = await api.prisma.invoice.findMany({
      where: { id: { in: bodies.map((b) => b.pago.id) } },
      orderBy: { folio: 'asc' },
    });
    expect(pagos.map((p) => [p.kind, p.status])).toEqual([
      ['P', 'pending'],
      ['P', 'pending'],
      ['P', 'pending'],
    ]);
    expect(pagos.map((p) => docto(p.frozenXml!))).toEqual(
      bodies.map((b) =>
        expect.objectContaining({
          IdDocumento: uuid,
          NumParcialidad: String(b.numParcialidad),
          ImpSaldoAnt: b.saldoAnterior,
          ImpPagado: b.amount,
          ImpSaldoInsoluto: b.saldoInsoluto,
          ObjetoImpDR: '02',
        }),
      ),
    );
    const xmls = pagos.map((p) => p.frozenXml!);
    expect(xmls[0]).toContain('TipoDeComprobante="P"');
    expect(xmls[0]).toContain('UsoCFDI="CP01"');
    expect(xmls[0]).toContain('NumOperacion="SPEI-5800.00"');
    expect(await schema.validate(xmls)).toEqual([]);
    for (const p of pagos) expect(satXslt(CFDI_XSLT, [p.frozenXml!])).toBe(p.cadenaOriginal);

    // Paid in full: one centavo more is an overpayment.
    const over = await pay(invoiceId, '0.01');
    expect(over.statusCode).toBe(422);
    expect(over.body).toMatchObject({ error: { code: 'installment_exceeds_balance' } });
  });

  it('the installment that pays the sale off closes its bases: the Pagos’ BaseDR add up to the Ingreso’s Base', async () => {
    const id = await ppdSale('6821.11');
    const ingreso = await api.prisma.invoice.findUniqueOrThrow({ where: { id } });
    expect(ingreso.frozenXml).toContain('SubTotal="5880.27"');
    await stamp(id);
    const bases: string[] = [];
    for (const amount of ['2267.63', '816.13', '1417.86', '1016.64', '1302.85']) {
      const res = await pay(id, amount, { externalId: `I-${randomUUID()}` });
      expect(res.statusCode).toBe(201);
      const pago = await api.prisma.invoice.findUniqueOrThrow({
        where: { id: (res.body as { pago: { id: string } }).pago.id },
      });
      bases.push(/BaseDR="([\d.]+)"/.exec(pago.frozenXml!)![1]!);
    }
    expect(bases.reduce((sum, b) => sum.plus(b), new BigNumber(0)).toFixed()).toBe('5880.27');
  });

  it('a one-cent installment carries the cent of IVA its share gives it, and the Pagos add up to the IVA', async () => {
    // Base 10000.00 and IVA 1600.00 of 11600.00: the Pagos report round(paid × 10000 / 11600) of the
    // base and round(paid × 1600 / 11600) of the IVA, cumulatively. After 0.03, a further 0.01 adds no
    // base at two decimals but 0.01 of IVA: it is reported on the six-decimal share of the base
    // (0.034483 − 0.025862), which Anexo 20's limits allow, so no cent of IVA is lost.
    const id = await ppdSale('11600.00');
    await stamp(id);
    const pagos: string[] = [];
    for (const amount of ['0.03', '0.01', '11599.96']) {
      const res = await pay(id, amount, { externalId: `T-${randomUUID()}` });
      expect(res.statusCode).toBe(201);
      const pago = await api.prisma.invoice.findUniqueOrThrow({
        where: { id: (res.body as { pago: { id: string } }).pago.id },
      });
      expect(pago.status).toBe('pending');
      expect(await schema.validate([pago.frozenXml!])).toEqual([]);
      pagos.push(pago.frozenXml!);
    }
    expect(docto(pagos[1]!)).toMatchObject({ ImpPagado: '0.01', ObjetoImpDR: '02' });
    expect(pagos[1]).toContain('<pago20:TrasladoDR BaseDR="0.008621" ImpuestoDR="002"');
    const iva = pagos.map((xml) => /<pago20:TrasladoDR [^>]*ImporteDR="([0-9.]+)"/.exec(xml)![1]);
    expect(iva).toEqual(['0.00', '0.01', '1599.99']);
  });

  it('before the Ingreso is stamped the Pago waits for it; an overpayment → 422 and nothing written', async () => {
    const invoiceId = await ppdSale('1160.00');
    const first = await pay(invoiceId, '1000.00');
    expect(first.statusCode).toBe(201);
    expect((first.body as InstallmentBody).pago).toMatchObject({
      kind: 'P',
      status: 'waiting',
      waitingFor: { invoiceId, status: 'pending', blocked: false },
    });
    const over = await pay(invoiceId, '160.01');
    expect(over.statusCode).toBe(422);
    expect(over.body).toMatchObject({
      error: {
        code: 'installment_exceeds_balance',
        details: [{ path: 'amount', message: expect.stringContaining('160.00') }],
      },
    });
    expect(await api.prisma.installment.count({ where: { invoiceId } })).toBe(1);
  });

  it('concurrent installments are numbered without gaps or repeats and never overpay', async () => {
    const invoiceId = await ppdSale('1000.00');
    const results = await Promise.all(Array.from({ length: 8 }, () => pay(invoiceId, '300.00')));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 201, 201, 422, 422, 422, 422, 422]);
    const numbers = results.flatMap((r) => (r.statusCode === 201 ? [(r.body as InstallmentBody).numParcialidad] : []));
    expect(numbers.sort()).toEqual([1, 2, 3]);
  });

  it('the same installment again → 200, the same one; other data → 409; a PUE invoice → 409 not_installments', async () => {
    const invoiceId = await ppdSale();
    const a = await pay(invoiceId, '100.00', { externalId: 'inst-same' });
    const b = await pay(invoiceId, '100.00', { externalId: 'inst-same' });
    expect([a.statusCode, b.statusCode]).toEqual([201, 200]);
    expect((b.body as InstallmentBody).id).toBe((a.body as InstallmentBody).id);
    expect((await pay(invoiceId, '200.00', { externalId: 'inst-same' })).body).toMatchObject({
      error: { code: 'installment_conflict' },
    });
    const pue = await post('/v1/payments', {
      externalId: `PUE-${randomUUID()}`,
      amount: '100.00',
      currency: 'MXN',
      occurredAt: new Date().toISOString(),
    });
    const pueInvoice = (pue.body as { invoices: { id: string }[] }).invoices[0]!.id;
    const refused = await pay(pueInvoice, '10.00');
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toMatchObject({ error: { code: 'not_installments' } });
    expect((await pay(randomUUID(), '10.00')).statusCode).toBe(404);
    for (const body of [
      { amount: '1.00', paidAt: 'ayer', formaPago: '03' },
      { amount: '1.00', paidAt: new Date().toISOString(), formaPago: '99' },
    ]) {
      const res = await post(`/v1/invoices/${invoiceId}/payments`, body);
      expect(res.statusCode).toBe(422);
    }
  });

  it('from Stripe: metadata payment_terms installments makes a PPD Ingreso; invoice_id makes a payment an installment of it', async () => {
    const send = (event: object) => {
      const d = stripeDelivery(event);
      return got.post(`${api.url}/webhooks/stripe`, {
        body: d.body,
        headers: { 'content-type': 'application/json', 'stripe-signature': d.signature },
        throwHttpErrors: false,
      });
    };
    const customer = {
      rfc: RECEPTOR.rfc,
      razon_social: RECEPTOR.nombre,
      regimen_fiscal: RECEPTOR.regimenFiscal,
      codigo_postal: RECEPTOR.codigoPostal,
      uso_cfdi: RECEPTOR.usoCfdi,
    };
    const sale = paymentIntentSucceeded({ amount: 348000, metadata: { ...customer, payment_terms: 'installments' } });
    expect((await send(sale)).statusCode).toBe(200);
    const ingreso = await api.prisma.invoice.findFirstOrThrow({
      where: { payment: { externalId: sale.data.object.id }, kind: 'I' },
    });
    expect(ingreso.frozenXml).toContain('MetodoPago="PPD"');

    const first = paymentIntentSucceeded({ amount: 116000, metadata: { invoice_id: ingreso.id, forma_pago: '03' } });
    expect((await send(first)).statusCode).toBe(200);
    expect((await send(first)).statusCode).toBe(200); // redelivered: nothing new
    const installments = await api.prisma.installment.findMany({
      where: { invoiceId: ingreso.id },
      include: { pago: true },
    });
    expect(
      installments.map((i) => [i.amount.toFixed(2), i.numParcialidad, i.formaPago, i.pago?.kind, i.pago?.status]),
    ).toEqual([['1160.00', 1, '03', 'P', 'waiting']]);
    // No payment (and no Ingreso) was recorded for the installment's PaymentIntent.
    expect(await api.prisma.payment.count({ where: { externalId: first.data.object.id } })).toBe(0);

    // Signed, but impossible to record: answered 200 (or Stripe would retry for days), stored as failed.
    const tooMuch = paymentIntentSucceeded({ amount: 300000, metadata: { invoice_id: ingreso.id } });
    const unknown = paymentIntentSucceeded({ amount: 100, metadata: { invoice_id: 'not-an-invoice' } });
    for (const [event, code] of [
      [tooMuch, 'installment_exceeds_balance'],
      [unknown, 'not_found'],
    ] as const) {
      expect((await send(event)).statusCode).toBe(200);
      expect(await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: event.id } })).toMatchObject({
        result: 'failed',
        reason: expect.stringContaining(`rejected: ${code}`),
      });
    }
    expect(await api.prisma.installment.count({ where: { invoiceId: ingreso.id } })).toBe(1);
  });

  it('from Stripe: installments without the customer leave the Ingreso needing data', async () => {
    const sale = paymentIntentSucceeded({ amount: 10000, metadata: { payment_terms: 'installments' } });
    const d = stripeDelivery(sale);
    await got.post(`${api.url}/webhooks/stripe`, {
      body: d.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': d.signature },
    });
    const ingreso = await api.prisma.invoice.findFirstOrThrow({
      where: { payment: { externalId: sale.data.object.id } },
    });
    expect(ingreso).toMatchObject({ status: 'needs_data', problems: [expect.objectContaining({ path: 'receptor' })] });
  });

  it('a refund of a sale in installments says how the money went back: else its Egreso needs that (FormaPago 99 is not for an Egreso)', async () => {
    const invoiceId = await ppdSale('1160.00');
    await stamp(invoiceId);
    const { paymentId } = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
    const withForma = await post(`/v1/payments/${paymentId}/refunds`, { amount: '116.00', formaPago: '03' });
    expect(withForma.body).toMatchObject({ egreso: { status: 'pending' } });
    const egreso = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: (withForma.body as { egreso: { id: string } }).egreso.id },
    });
    expect(egreso.frozenXml).toContain('FormaPago="03"');
    const without = await post(`/v1/payments/${paymentId}/refunds`, { amount: '116.00' });
    expect(without.body).toMatchObject({
      egreso: {
        status: 'needs_data',
        problems: [expect.objectContaining({ rule: 'CFDI40104', path: '/cfdi:Comprobante/@FormaPago' })],
      },
    });
  });
});
