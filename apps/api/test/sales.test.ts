/**
 * Real sales through the API: products and customers entered once, payments with lines (REST,
 * Stripe Checkout through the provider sandbox, Mercado Pago items), currencies with their TipoCambio
 * (request, Stripe's settlement, Banxico's rate from the provider sandbox's SIE API), refunds of one
 * line and installments of a mixed-rate sale. Every frozen document is checked against the XSD.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { attr, childElements, NS, parseXml } from '@timbra/cfdi-core';
import { eventually, SchemaValidator } from '@timbra/test-support';
import { jsonPoster, KEYS, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true, rates: true });
});
afterAll(() => api.close());

const schema = new SchemaValidator();
const post = jsonPoster(() => api);
const auth = { authorization: `Bearer ${KEYS.pos}` };
const get = <T>(path: string) => got.get(`${api.url}${path}`, { headers: auth }).json<T>();
const patch = (path: string, body: object) =>
  got.patch(`${api.url}${path}`, { json: body, headers: auth, throwHttpErrors: false, responseType: 'json' });
const recent = () => new Date(Date.now() - 60_000).toISOString();
const unique = (tag: string) => `${tag}-${randomUUID().slice(0, 8)}`;

type ErrorBody = { error: { code: string; details?: { path: string; message: string; difference?: string }[] } };
type PaymentBody = {
  id: string;
  invoices: { id: string; status: string }[];
  lines: unknown[] | null;
  customerId: string | null;
  tipoCambio: { rate: string; source: string } | null;
};

const conceptosOf = (xml: string) =>
  childElements(childElements(parseXml(xml), NS.cfdi, 'Conceptos')[0]!, NS.cfdi, 'Concepto').map((c) => ({
    claveProdServ: attr(c, 'ClaveProdServ'),
    descripcion: attr(c, 'Descripcion'),
    objetoImp: attr(c, 'ObjetoImp'),
    taxes: (childElements(c, NS.cfdi, 'Impuestos')[0]
      ? childElements(
          childElements(childElements(c, NS.cfdi, 'Impuestos')[0]!, NS.cfdi, 'Traslados')[0]!,
          NS.cfdi,
          'Traslado',
        )
      : []
    ).map((t) => `${attr(t, 'Impuesto')}:${attr(t, 'TipoFactor')}:${attr(t, 'TasaOCuota') ?? ''}`),
  }));

async function frozenOf(invoiceId: string): Promise<string> {
  const row = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
  expect(row.status).toBe('pending');
  expect(await schema.validate([row.frozenXml!])).toEqual([]);
  return row.frozenXml!;
}

async function stamp(invoiceId: string): Promise<string> {
  const uuid = randomUUID().toUpperCase();
  await api.prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamped', uuid } });
  return uuid;
}

const CUSTOMER = {
  rfc: 'CACX7605101P8',
  nombre: 'XOCHILT CASAS CHAVEZ',
  codigoPostal: '36257',
  regimenFiscal: '612',
  usoCfdi: 'G03',
};

describe('products', () => {
  it('are checked against the catalogues, keep their tax profile, and are found by reference', async () => {
    const reference = unique('AUD');
    const created = await post('/v1/products', {
      reference,
      descripcion: 'Audífonos inalámbricos',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
      unidad: 'Pieza',
      taxes: { iva: '16' },
      unitPrice: '1160.00',
    });
    expect(created.statusCode).toBe(201);
    expect(created.body).toMatchObject({ reference, claveUnidad: 'H87', taxes: { iva: '16' }, priceIncludesTax: true });

    const refused = await post('/v1/products', {
      reference: unique('BAD'),
      descripcion: 'x',
      claveProdServ: '5216151',
      claveUnidad: 'ZZZ',
      taxes: { iva: '16', ieps: '7.5', retenciones: { isr: '40' } },
    });
    expect(refused.statusCode).toBe(422);
    expect((refused.body as ErrorBody).error.details!.map((d) => d.path).sort()).toEqual([
      'claveProdServ',
      'claveUnidad',
      'taxes.ieps',
      'taxes.retenciones.isr',
    ]);

    const again = await post('/v1/products', {
      reference,
      descripcion: 'x',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
    });
    expect(again.statusCode).toBe(409);
    expect((again.body as ErrorBody).error.code).toBe('product_reference_taken');

    const listed = await get<{ data: { id: string }[] }>(`/v1/products?reference=${reference}`);
    expect(listed.data).toHaveLength(1);
    const id = listed.data[0]!.id;
    const changed = await patch(`/v1/products/${id}`, { unitPrice: '1299.00', taxes: { iva: '8' } });
    expect(changed.statusCode).toBe(200);
    expect(changed.body).toMatchObject({ unitPrice: '1299', taxes: { iva: '8' } });
    expect((await patch(`/v1/products/${randomUUID()}`, { active: false })).statusCode).toBe(404);
  });
  it('with the SAT’s c_ClaveProdServ supplied (SAT_CLAVE_PROD_SERV_FILE), a key not in it is refused', async () => {
    const strict = await startApi({ catalogs: { clavesProdServ: new Set(['52161514']) } });
    try {
      const postTo = (body: object) =>
        got.post(`${strict.url}/v1/products`, {
          json: body,
          headers: auth,
          throwHttpErrors: false,
          responseType: 'json',
        });
      const body = { descripcion: 'x', claveUnidad: 'H87' };
      expect((await postTo({ ...body, reference: unique('IN'), claveProdServ: '52161514' })).statusCode).toBe(201);
      const refused = await postTo({ ...body, reference: unique('OUT'), claveProdServ: '52161515' });
      expect(refused.statusCode).toBe(422);
      expect((refused.body as ErrorBody).error.details).toEqual([
        { path: 'claveProdServ', message: '52161515 is not in c_ClaveProdServ (SAT_CLAVE_PROD_SERV_FILE)' },
      ]);
      // A sale's own key is the SAT rules' to refuse (CFDI40162), given the same catalogue.
      const sale = await got.post(`${strict.url}/v1/payments`, {
        json: {
          externalId: unique('sale'),
          amount: '116.00',
          currency: 'MXN',
          occurredAt: recent(),
          conceptos: [{ descripcion: 'Bolsa', claveProdServ: '52161515', claveUnidad: 'H87', amount: '116.00' }],
        },
        headers: { ...auth, 'idempotency-key': unique('k') },
        throwHttpErrors: false,
        responseType: 'json',
      });
      expect(sale.statusCode).toBe(422);
      expect(sale.body).toMatchObject({ error: { code: 'fiscal_rules_failed', details: [{ rule: 'CFDI40162' }] } });
    } finally {
      await strict.close();
    }
  });
});

describe('customers', () => {
  it('an RFC must match its check digit, the régimen its persona, the UsoCFDI its régimen', async () => {
    const created = await post('/v1/customers', { ...CUSTOMER, stripeCustomerId: `cus_${randomUUID().slice(0, 8)}` });
    expect(created.statusCode).toBe(201);

    const typo = await post('/v1/customers', { ...CUSTOMER, rfc: 'CACX7605101P9' });
    expect(typo.statusCode).toBe(422);
    expect((typo.body as ErrorBody).error.details).toEqual([
      { path: 'rfc', message: expect.stringContaining('the check digit should be 8') as unknown },
    ]);
    const wrongRegimen = await post('/v1/customers', { ...CUSTOMER, regimenFiscal: '601' });
    expect((wrongRegimen.body as ErrorBody).error.details![0]).toMatchObject({ path: 'regimenFiscal' });
    const wrongUso = await post('/v1/customers', {
      ...CUSTOMER,
      rfc: 'EKU9003173C9',
      nombre: 'ESCUELA KEMPER URGATE',
      regimenFiscal: '601',
      usoCfdi: 'D01',
    });
    expect((wrongUso.body as ErrorBody).error.details![0]).toMatchObject({ path: 'usoCfdi' });
    const generic = await post('/v1/customers', { ...CUSTOMER, rfc: 'XAXX010101000' });
    expect((generic.body as ErrorBody).error.details![0]).toMatchObject({ path: 'rfc' });

    const stripeId = (created.body as { stripeCustomerId: string }).stripeCustomerId;
    const taken = await post('/v1/customers', { ...CUSTOMER, stripeCustomerId: stripeId });
    expect(taken.statusCode).toBe(409);
    expect((taken.body as ErrorBody).error.code).toBe('customer_conflict');
  });
});

describe('a payment with lines (REST)', () => {
  it('three lines at 16% (a product), 0% and exento → one concepto each; the customer is the receptor; changing the customer later changes no frozen CFDI', async () => {
    const reference = unique('AUD');
    await post('/v1/products', {
      reference,
      descripcion: 'Audífonos',
      claveProdServ: '52161514',
      claveUnidad: 'H87',
      taxes: { iva: '16' },
      unitPrice: '580.00',
    });
    const customer = (await post('/v1/customers', CUSTOMER)).body as { id: string };
    const res = await post('/v1/payments', {
      externalId: unique('sale'),
      amount: '1558.00',
      currency: 'MXN',
      occurredAt: recent(),
      customerId: customer.id,
      conceptos: [
        { product: reference, cantidad: '2' },
        {
          claveProdServ: '50221200',
          claveUnidad: 'KGM',
          descripcion: 'Tortilla',
          cantidad: '2',
          unitPrice: '24.50',
          taxes: { iva: '0' },
        },
        {
          claveProdServ: '55101500',
          claveUnidad: 'H87',
          descripcion: 'Libro',
          amount: '349.00',
          taxes: { iva: 'exento' },
        },
      ],
    });
    expect(res.statusCode).toBe(201);
    const body = res.body as PaymentBody;
    expect(body.customerId).toBe(customer.id);
    expect(body.lines).toHaveLength(3);
    const xml = await frozenOf(body.invoices[0]!.id);
    expect(conceptosOf(xml)).toEqual([
      { claveProdServ: '52161514', descripcion: 'Audífonos', objetoImp: '02', taxes: ['002:Tasa:0.160000'] },
      { claveProdServ: '50221200', descripcion: 'Tortilla', objetoImp: '02', taxes: ['002:Tasa:0.000000'] },
      { claveProdServ: '55101500', descripcion: 'Libro', objetoImp: '02', taxes: ['002:Exento:'] },
    ]);
    expect(xml).toContain('Total="1558.00"');
    expect(xml).toContain('Rfc="CACX7605101P8" Nombre="XOCHILT CASAS CHAVEZ"');

    expect((await patch(`/v1/customers/${customer.id}`, { nombre: 'XOCHILT CASAS' })).statusCode).toBe(200);
    const after = await api.prisma.invoice.findUniqueOrThrow({ where: { id: body.invoices[0]!.id } });
    expect(after.frozenXml).toBe(xml);
  });

  it('refuses lines that do not add up (with the difference), unknown products and customers — nothing written', async () => {
    const before = await api.prisma.payment.count();
    const mismatch = await post('/v1/payments', {
      externalId: unique('bad'),
      amount: '100.00',
      currency: 'MXN',
      occurredAt: recent(),
      conceptos: [
        { descripcion: 'A', amount: '60.00' },
        { descripcion: 'B', amount: '39.00' },
      ],
    });
    expect(mismatch.statusCode).toBe(422);
    expect((mismatch.body as ErrorBody).error).toMatchObject({
      code: 'lines_total_mismatch',
      details: [{ path: 'conceptos', lines: '99.00', paid: '100.00', difference: '1.00' }],
    });
    const noProduct = await post('/v1/payments', {
      externalId: unique('bad'),
      amount: '100.00',
      currency: 'MXN',
      occurredAt: recent(),
      conceptos: [{ product: 'NO-SUCH-THING', amount: '100.00' }],
    });
    expect((noProduct.body as ErrorBody).error.code).toBe('product_not_found');
    const noCustomer = await post('/v1/payments', {
      externalId: unique('bad'),
      amount: '100.00',
      currency: 'MXN',
      occurredAt: recent(),
      customerId: randomUUID(),
    });
    expect((noCustomer.body as ErrorBody).error.code).toBe('customer_not_found');
    expect(await api.prisma.payment.count()).toBe(before);
  });

  it('a partial refund of one line: its Egreso carries that line’s tax (0%), not the sale’s', async () => {
    const res = await post('/v1/payments', {
      externalId: unique('sale'),
      amount: '1216.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: CUSTOMER,
      conceptos: [
        { descripcion: 'Bocina', amount: '1160.00' },
        { descripcion: 'Leche', amount: '56.00', taxes: { iva: '0' } },
      ],
    });
    const payment = res.body as PaymentBody;
    await stamp(payment.invoices[0]!.id);
    const tooMuch = await post(`/v1/payments/${payment.id}/refunds`, {
      amount: '60.00',
      lines: [{ line: 1, amount: '60.00' }],
    });
    expect(tooMuch.statusCode).toBe(422);
    const refund = await post(`/v1/payments/${payment.id}/refunds`, {
      amount: '28.00',
      lines: [{ line: 1, amount: '28.00' }],
    });
    expect(refund.statusCode).toBe(201);
    const egreso = (refund.body as { egreso: { id: string; total: string } }).egreso;
    expect(egreso.total).toBe('28.00');
    const xml = await frozenOf(egreso.id);
    expect(conceptosOf(xml)).toEqual([
      { claveProdServ: '84111506', descripcion: 'Devolución', objetoImp: '02', taxes: ['002:Tasa:0.000000'] },
    ]);
    // What is left of that line, and no more.
    const rest = await post(`/v1/payments/${payment.id}/refunds`, {
      amount: '28.01',
      lines: [{ line: 1, amount: '28.01' }],
    });
    expect(rest.statusCode).toBe(422);
    // A refund naming no line gives back every line in proportion: two conceptos, 16% and 0%.
    const spread = await post(`/v1/payments/${payment.id}/refunds`, { amount: '100.00' });
    const spreadXml = await frozenOf((spread.body as { egreso: { id: string } }).egreso.id);
    expect(conceptosOf(spreadXml).map((c) => c.taxes)).toEqual([['002:Tasa:0.160000'], ['002:Tasa:0.000000']]);
    expect(spreadXml).toContain('Total="100.00"');
  });

  it('installments of a mixed-rate sale: each Pago reports the Ingreso’s own taxes, and they add up to them', async () => {
    const res = await post('/v1/payments', {
      externalId: unique('ppd'),
      amount: '2000.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: CUSTOMER,
      paymentTerms: 'installments',
      conceptos: [
        { descripcion: 'Curso', amount: '1160.00' },
        { descripcion: 'Libro', amount: '500.00', taxes: { iva: 'exento' } },
        { descripcion: 'Despensa', amount: '340.00', taxes: { iva: '0' } },
      ],
    });
    expect(res.statusCode).toBe(201);
    const ingresoId = (res.body as PaymentBody).invoices[0]!.id;
    const ingresoXml = await frozenOf(ingresoId);
    await stamp(ingresoId);
    const pagos: string[] = [];
    for (const amount of ['666.67', '666.67', '666.66']) {
      const paid = await post(`/v1/invoices/${ingresoId}/payments`, { amount, paidAt: recent(), formaPago: '03' });
      expect(paid.statusCode).toBe(201);
      pagos.push(await frozenOf((paid.body as { pago: { id: string } }).pago.id));
    }
    const sum = (xmls: string[], re: RegExp) =>
      xmls.flatMap((x) => [...x.matchAll(re)]).reduce((s, m) => s + Math.round(Number(m[1]) * 100), 0);
    for (const [tasa, ingresoBase] of [
      ['0.160000', '1000.00'],
      ['0.000000', '340.00'],
    ] as const) {
      expect(
        sum(pagos, new RegExp(`BaseDR="([\\d.]+)" ImpuestoDR="002" TipoFactorDR="Tasa" TasaOCuotaDR="${tasa}"`, 'g')),
      ).toBe(Math.round(Number(ingresoBase) * 100));
    }
    expect(sum(pagos, /ImpuestoDR="002" TipoFactorDR="Tasa" TasaOCuotaDR="0.160000" ImporteDR="([\d.]+)"/g)).toBe(
      16000,
    );
    expect(sum(pagos, /BaseDR="([\d.]+)" ImpuestoDR="002" TipoFactorDR="Exento"/g)).toBe(50000);
    expect(ingresoXml).toContain('Total="2000.00"');
  });
});

/**
 * Noon in Mexico City (18:00 UTC) `days` ago: its UTC date is its Mexico City date, the day the
 * exchange rate is looked up for (at 04:00 UTC, Mexico City is still on the day before).
 */
function middayDaysAgo(days: number): Date {
  const at = new Date();
  at.setUTCHours(18, 0, 0, 0);
  at.setUTCDate(at.getUTCDate() - days);
  return at;
}

describe('currencies', () => {
  const usd = (extra: object) =>
    post('/v1/payments', {
      externalId: unique('usd'),
      amount: '58.00',
      currency: 'USD',
      occurredAt: recent(),
      ...extra,
    });

  it('TipoCambio from the request, checked against Banxico’s rate (c_Moneda: ±5%)', async () => {
    const given = await usd({ tipoCambio: '17.5000' });
    expect(given.statusCode).toBe(201);
    expect((given.body as PaymentBody).tipoCambio).toEqual({ rate: '17.5', source: 'request' });
    expect(await frozenOf((given.body as PaymentBody).invoices[0]!.id)).toContain('Moneda="USD" TipoCambio="17.5000"');
    const wild = await usd({ tipoCambio: '25.00' });
    expect(wild.statusCode).toBe(422);
    expect((wild.body as ErrorBody).error.code).toBe('exchange_rate_out_of_range');
  });

  it('a Pago in dollars takes the rate of its FechaPago’s day, not the sale’s; a tipoCambioP given is checked against it', async () => {
    const paidAt = middayDaysAgo(12);
    const dayBefore = new Date(paidAt.getTime() - 86_400_000).toISOString().slice(0, 10);
    await api.providers.banxicoRate({ date: dayBefore, dato: '18.4000' });
    const sale = await usd({ amount: '116.00', receptor: CUSTOMER, paymentTerms: 'installments' });
    expect(sale.statusCode).toBe(201);
    const ingresoId = (sale.body as PaymentBody).invoices[0]!.id;
    expect(await frozenOf(ingresoId)).toContain('TipoCambio="17.2543"');
    await stamp(ingresoId);
    const installment = (extra: object) =>
      post(`/v1/invoices/${ingresoId}/payments`, {
        amount: '58.00',
        paidAt: paidAt.toISOString(),
        formaPago: '03',
        externalId: unique('usd-pago'),
        ...extra,
      });
    const wild = await installment({ tipoCambioP: '17.2543' }); // the sale's: 6% off the day's 18.40
    expect(wild.statusCode).toBe(422);
    expect((wild.body as ErrorBody).error).toMatchObject({
      code: 'exchange_rate_out_of_range',
      details: [{ path: 'tipoCambioP' }],
    });
    const paid = await installment({});
    expect(paid.statusCode).toBe(201);
    const pago = await frozenOf((paid.body as { pago: { id: string } }).pago.id);
    expect(pago).toContain('MonedaP="USD" TipoCambioP="18.4" Monto="58.00"');
    // MontoTotalPagos in pesos at the day's rate: 58.00 × 18.4.
    expect(pago).toContain('MontoTotalPagos="1067.20"');
  });

  it('an Egreso in dollars takes the rate of the refund’s day, checked like an Ingreso’s, not the sale’s', async () => {
    // The day before the refund's has 18.40; the sale's days have the base rate, 17.2543.
    const refundedAt = middayDaysAgo(12).toISOString();
    const dayBefore = new Date(Date.parse(refundedAt) - 86_400_000).toISOString().slice(0, 10);
    await api.providers.banxicoRate({ date: dayBefore, dato: '18.4000' });
    const sale = await usd({ amount: '116.00', occurredAt: new Date(Date.now() - 30 * 86_400_000).toISOString() });
    expect(sale.statusCode).toBe(201);
    const body = sale.body as PaymentBody & { id: string };
    expect(await frozenOf(body.invoices[0]!.id)).toContain('TipoCambio="17.2543"');
    await stamp(body.invoices[0]!.id);
    const refund = (extra: object) =>
      post(`/v1/payments/${body.id}/refunds`, {
        amount: '16.00',
        occurredAt: refundedAt,
        externalId: unique('usd-refund'),
        ...extra,
      });
    const stale = await refund({ tipoCambio: '17.2543' });
    expect(stale.statusCode).toBe(422);
    expect((stale.body as ErrorBody).error).toMatchObject({
      code: 'exchange_rate_out_of_range',
      details: [{ path: 'tipoCambio' }],
    });
    const made = await refund({});
    expect(made.statusCode).toBe(201);
    const egreso = await frozenOf((made.body as { egreso: { id: string } }).egreso.id);
    expect(egreso).toContain('Moneda="USD" TipoCambio="18.4"');
  });

  it('a currency without decimals (JPY, c_Moneda: 0): amounts and the Total have none', async () => {
    const yen = await post('/v1/payments', {
      externalId: unique('jpy'),
      amount: '11600',
      currency: 'JPY',
      occurredAt: recent(),
      conceptos: [
        { descripcion: 'Té', amount: '5800' },
        { descripcion: 'Arroz', amount: '5800', taxes: { iva: '0' } },
      ],
    });
    expect(yen.statusCode).toBe(201);
    const xml = await frozenOf((yen.body as PaymentBody).invoices[0]!.id);
    expect(xml).toContain('SubTotal="10800" Moneda="JPY" TipoCambio="0.1154" Total="11600"');
    expect((await usd({ amount: '58.001' })).statusCode).toBe(422);
  });

  it('without one, Banxico’s FIX of the day before (the provider sandbox’s SIE API); a currency without a rate → 422', async () => {
    const fromBanxico = await usd({});
    expect(fromBanxico.statusCode).toBe(201);
    expect((fromBanxico.body as PaymentBody).tipoCambio).toEqual({ rate: '17.2543', source: 'banxico' });
    expect(await frozenOf((fromBanxico.body as PaymentBody).invoices[0]!.id)).toContain('TipoCambio="17.2543"');
    const chf = await post('/v1/payments', {
      externalId: unique('chf'),
      amount: '50.00',
      currency: 'CHF',
      occurredAt: recent(),
    });
    expect(chf.statusCode).toBe(422);
    expect((chf.body as ErrorBody).error.code).toBe('exchange_rate_unavailable');
  });
});

describe('from the providers', () => {
  const ingresoOf = async (externalId: string) => {
    const find = () => api.prisma.payment.findFirst({ where: { externalId }, include: { invoices: true } });
    await eventually(async () => ((await find())?.invoices.length ?? 0) > 0);
    const payment = (await find())!;
    return { payment, invoice: payment.invoices[0]! };
  };

  it('a Stripe Checkout Session with two products → one invoice with two conceptos and the products’ keys; the Stripe customer is ours', async () => {
    const reference = unique('CAM');
    await post('/v1/products', {
      reference,
      descripcion: 'Cámara deportiva',
      claveProdServ: '45121504',
      claveUnidad: 'H87',
      taxes: { iva: '16' },
    });
    const stripeCustomer = `cus_${randomUUID().replace(/-/g, '').slice(0, 14)}`;
    await post('/v1/customers', { ...CUSTOMER, stripeCustomerId: stripeCustomer });
    const made = await api.providers.checkoutSession({
      customer: stripeCustomer,
      lines: [
        { name: 'Cámara', quantity: 1, unitAmount: 348000, metadata: { timbra_product: reference } },
        {
          name: 'Tarjeta de memoria',
          quantity: 2,
          unitAmount: 29000,
          metadata: { sat_product_key: '43202005', sat_unit_key: 'H87' },
        },
      ],
    });
    const { payment, invoice } = await ingresoOf(made.paymentIntent.id);
    expect(payment.amount.toFixed(2)).toBe('4060.00');
    const xml = await frozenOf(invoice.id);
    expect(conceptosOf(xml).map((c) => [c.claveProdServ, c.descripcion])).toEqual([
      ['45121504', 'Cámara deportiva'],
      ['43202005', 'Tarjeta de memoria'],
    ]);
    expect(xml).toContain('Cantidad="2" ClaveUnidad="H87"');
    expect(xml).toContain('Rfc="CACX7605101P8"');
    expect(xml).toContain('Total="4060.00"');
    // charge.succeeded, payment_intent.succeeded and checkout.session.completed: one payment.
    expect(await api.prisma.payment.count({ where: { externalId: made.paymentIntent.id } })).toBe(1);
  });

  it('a paid Stripe Invoice with two products → one invoice, one concepto per line (found through its InvoicePayment)', async () => {
    const made = await api.providers.stripeInvoice({
      lines: [
        {
          name: 'Suscripción mensual',
          quantity: 1,
          unitAmount: 58000,
          metadata: { sat_product_key: '81112500', sat_unit_key: 'E48' },
        },
        { name: 'Usuarios adicionales', quantity: 3, unitAmount: 11600, metadata: {} },
      ],
    });
    const { payment, invoice } = await ingresoOf(made.paymentIntent.id);
    expect(payment.amount.toFixed(2)).toBe('928.00');
    const xml = await frozenOf(invoice.id);
    expect(conceptosOf(xml).map((c) => [c.claveProdServ, c.descripcion])).toEqual([
      ['81112500', 'Suscripción mensual'],
      ['01010101', 'Usuarios adicionales'],
    ]);
    expect(xml).toContain('Cantidad="3"');
    // charge.succeeded, payment_intent.succeeded and invoice.paid: one payment.
    expect(await api.prisma.payment.count({ where: { externalId: made.paymentIntent.id } })).toBe(1);
    const events = await api.prisma.webhookEvent.findMany({ where: { type: 'invoice.paid' } });
    expect(events.map((e) => e.result)).toEqual(['accepted']);
  });

  it('a Stripe payment in dollars settled in pesos: TipoCambio is the balance transaction’s exchange_rate', async () => {
    const made = await api.providers.stripePayment({ amount: 5800, currency: 'usd', settlementExchangeRate: 17.3125 });
    const { payment, invoice } = await ingresoOf(made.paymentIntent.id);
    expect(payment.tipoCambioSource).toBe('stripe');
    expect(await frozenOf(invoice.id)).toContain('Moneda="USD" TipoCambio="17.3125" Total="58.00"');
  });

  it('Mercado Pago additional_info.items → conceptos (an item id that is a product’s reference takes its keys); the payer is our customer', async () => {
    const reference = unique('TAZ');
    await post('/v1/products', {
      reference,
      descripcion: 'Taza de cerámica',
      claveProdServ: '52151634',
      claveUnidad: 'H87',
      taxes: { iva: '16' },
    });
    const payerId = String(Date.now());
    await post('/v1/customers', { ...CUSTOMER, mercadoPagoPayerId: payerId });
    const made = await api.providers.mercadoPagoPayment({
      amount: 406,
      payerId,
      items: [
        { id: reference, title: 'Taza', quantity: 2, unit_price: 145 },
        { id: 'not-ours', title: 'Galletas', quantity: 1, unit_price: 116 },
      ],
    });
    const { invoice } = await ingresoOf(String(made.payment.id));
    const xml = await frozenOf(invoice.id);
    expect(conceptosOf(xml).map((c) => [c.claveProdServ, c.descripcion])).toEqual([
      ['52151634', 'Taza de cerámica'],
      ['01010101', 'Galletas'],
    ]);
    expect(xml).toContain('Rfc="CACX7605101P8"');
    expect(xml).toContain('Total="406.00"');
  });

  it('Mercado Pago items that do not add up (shipping charged apart): recorded, needs data; corrected with all the lines → frozen', async () => {
    const made = await api.providers.mercadoPagoPayment({
      amount: 399,
      items: [{ id: 'x', title: 'Tenis', quantity: 1, unit_price: 299 }],
    });
    const { payment, invoice } = await ingresoOf(String(made.payment.id));
    expect(invoice.status).toBe('needs_data');
    expect(JSON.stringify(invoice.problems)).toContain('difference 100.00');
    expect(payment.lines).toHaveLength(1);
    const fixed = await patch(`/v1/invoices/${invoice.id}`, {
      conceptos: [
        { descripcion: 'Tenis', amount: '299.00' },
        { claveProdServ: '78102203', claveUnidad: 'E48', descripcion: 'Envío', amount: '100.00' },
      ],
      reason: 'el envío se cobró aparte',
    });
    expect(fixed.statusCode).toBe(200);
    const xml = await frozenOf(invoice.id);
    expect(conceptosOf(xml).map((c) => c.descripcion)).toEqual(['Tenis', 'Envío']);
    expect(xml).toContain('Total="399.00"');
    expect((await api.prisma.payment.findUniqueOrThrow({ where: { id: payment.id } })).lines).toHaveLength(2);
    // Lines that still do not add up are refused, with the difference, and nothing changes.
    const other = await api.providers.mercadoPagoPayment({
      amount: 50,
      items: [{ id: 'y', title: 'Calcetas', quantity: 1, unit_price: 45 }],
    });
    const { invoice: stuck } = await ingresoOf(String(other.payment.id));
    const refused = await patch(`/v1/invoices/${stuck.id}`, {
      conceptos: [{ descripcion: 'Calcetas', amount: '49.00' }],
    });
    expect(refused.statusCode).toBe(422);
    expect((refused.body as ErrorBody).error).toMatchObject({
      code: 'lines_total_mismatch',
      details: [{ difference: '1.00' }],
    });
    expect((await api.prisma.invoice.findUniqueOrThrow({ where: { id: stuck.id } })).status).toBe('needs_data');
  });

  it('Mercado Pago: a free item is no concepto; an item whose price is not money leaves the invoice in needs_data — the money is always recorded', async () => {
    const gift = await api.providers.mercadoPagoPayment({
      amount: 290,
      items: [
        { id: 'z', title: 'Tenis', quantity: 1, unit_price: 290 },
        { id: 'g', title: 'Regalo', quantity: 1, unit_price: 0 },
      ],
    });
    const { invoice } = await ingresoOf(String(gift.payment.id));
    expect(invoice.status).toBe('pending');
    const xml = await frozenOf(invoice.id);
    expect(conceptosOf(xml).map((c) => c.descripcion)).toEqual(['Tenis']);
    expect(xml).not.toContain('ValorUnitario="0');
    const broken = await api.providers.mercadoPagoPayment({
      amount: 100,
      items: [{ id: 'n', title: 'Algo', quantity: 1, unit_price: -100 }],
    });
    const event = await api.prisma.webhookEvent.findFirstOrThrow({
      where: { provider: 'mercadopago', eventId: { contains: `:${broken.payment.id}:` } },
    });
    expect(event.result).toBe('accepted');
    const stuck = await ingresoOf(String(broken.payment.id));
    expect(stuck.payment.amount.toFixed(2)).toBe('100.00');
    expect(stuck.invoice.status).toBe('needs_data');
    expect(JSON.stringify(stuck.invoice.problems)).toContain('conceptos.0.unitPrice');
  });

  it('the customer’s address comes from the provider: Stripe’s receipt_email, Mercado Pago’s payer.email', async () => {
    const stripe = await api.providers.stripePayment({ amount: 11600, receiptEmail: 'recibos@cliente.example' });
    expect((await ingresoOf(stripe.paymentIntent.id)).payment.email).toBe('recibos@cliente.example');
    const mp = await api.providers.mercadoPagoPayment({ amount: 116, payerEmail: 'comprador@cliente.example' });
    expect((await ingresoOf(String(mp.payment.id))).payment.email).toBe('comprador@cliente.example');
    // An address that is not one is no reason to refuse money: the payment is recorded without it.
    const odd = await api.providers.mercadoPagoPayment({ amount: 116, payerEmail: 'not an address' });
    expect((await ingresoOf(String(odd.payment.id))).payment.email).toBeNull();
  });

  it('Stripe lines that do not add up to the money: the payment is recorded, its invoice needs data and says why', async () => {
    const made = await api.providers.stripePayment({
      amount: 10000,
      metadata: { timbra_product: 'NO-SUCH-PRODUCT' },
    });
    const { invoice } = await ingresoOf(made.paymentIntent.id);
    expect(invoice.status).toBe('needs_data');
    expect(JSON.stringify(invoice.problems)).toContain('no product NO-SUCH-PRODUCT');
  });
});
