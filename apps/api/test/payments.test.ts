import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { parseXml } from '@timbra/cfdi-core';
import { KEYS, stampAsWorker, startApi, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const auth = { authorization: `Bearer ${KEYS.pos}` };
const post = (body: unknown, headers: Record<string, string> = {}) =>
  got.post(`${api.url}/v1/payments`, {
    json: body,
    headers: { ...auth, ...headers },
    throwHttpErrors: false,
    responseType: 'json',
  });
const recent = () => new Date(Date.now() - 60_000).toISOString();

interface PaymentBody {
  id: string;
  amount: string;
  invoices: { id: string; status: string; serieFolio: string; folio: number; problems?: { path: string }[] }[];
}

describe('POST /v1/payments', () => {
  it('writes payment, invoice with a frozen CFDI and an outbox row; the CFDI total is the amount', async () => {
    const res = await post({ externalId: 'T-1', amount: '100.00', currency: 'MXN', occurredAt: recent() });
    expect(res.statusCode).toBe(201);
    const body = res.body as PaymentBody;
    expect(body.amount).toBe('100.00');
    const invoice = body.invoices[0]!;
    expect(invoice.status).toBe('pending');
    const row = await api.prisma.invoice.findUniqueOrThrow({ where: { id: invoice.id }, include: { outbox: true } });
    expect(row.outbox).toHaveLength(1);
    expect(row.outbox[0]).toMatchObject({ status: 'pending', kind: 'stamp', stampKey: row.stampKey });
    const xml = parseXml(row.frozenXml!);
    expect(xml.attrs.find(([k]) => k === 'Total')?.[1]).toBe('100.00');
    expect(row.frozenXml).toContain('Rfc="XAXX010101000"');
    expect(row.frozenXml).toContain('<cfdi:InformacionGlobal');
    // The payment's own id is not a product's: no NoIdentificacion (the PDF once printed "Venta (T-1)").
    expect(row.frozenXml).not.toContain('NoIdentificacion');

    const xmlRes = await got.get(`${api.url}/v1/invoices/${invoice.id}/xml`, { headers: auth });
    expect(xmlRes.headers['x-timbra-xml']).toBe('frozen');
    expect(xmlRes.headers['content-disposition']).toBe(`attachment; filename="A-${row.folio}-sin-timbrar.xml"`);
    expect(xmlRes.body).toBe(row.frozenXml);
    const uuid = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F';
    await stampAsWorker(api.prisma, row.id, uuid);
    const stamped = await got.get(`${api.url}/v1/invoices/${invoice.id}/xml`, { headers: auth });
    expect(stamped.headers['content-disposition']).toBe(`attachment; filename="A-${row.folio}-${uuid}.xml"`);
    const view = await got
      .get(`${api.url}/v1/invoices/${invoice.id}`, { headers: auth })
      .json<{ history: { outbox: unknown[] }; stampKey: string }>();
    expect(view.history.outbox).toHaveLength(1);
  });

  it('invoices a customer with fiscal data to that customer', async () => {
    const res = await post({
      externalId: 'T-2',
      amount: '1160.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '612',
        codigoPostal: '36257',
        usoCfdi: 'G03',
      },
    });
    expect(res.statusCode).toBe(201);
    const invoice = await api.prisma.invoice.findUniqueOrThrow({
      where: { id: (res.body as PaymentBody).invoices[0]!.id },
    });
    expect(invoice.frozenXml).toContain('Rfc="CACX7605101P8"');
    expect(invoice.frozenXml).toContain('SubTotal="1000.00"');
  });

  it('refuses a payment whose CFDI would break a SAT rule (422 with the rule codes), taking no folio and storing nothing', async () => {
    const serie = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const res = await post({
      externalId: 'T-3',
      amount: '50.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '601',
        codigoPostal: '36257',
        usoCfdi: 'G03',
      },
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toMatchObject({
      error: {
        code: 'fiscal_rules_failed',
        details: expect.arrayContaining([
          {
            rule: 'CFDI40158',
            path: '/cfdi:Comprobante/cfdi:Receptor/@RegimenFiscalReceptor',
            message: expect.stringMatching(/^CFDI40158: /),
            messageEs: expect.stringContaining('tipo de persona'),
          },
        ]),
      },
    });
    expect(await api.prisma.payment.count({ where: { externalId: 'T-3' } })).toBe(0);
    const after = await api.prisma.serie.findUniqueOrThrow({ where: { id: serie.id } });
    expect(after.nextFolio).toBe(serie.nextFolio);
    // Fixed, the same payment goes through and takes that very folio.
    const fixed = await post({
      externalId: 'T-3',
      amount: '50.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: 'XOCHILT CASAS CHAVEZ',
        regimenFiscal: '612',
        codigoPostal: '36257',
        usoCfdi: 'G03',
      },
    });
    expect(fixed.statusCode).toBe(201);
    expect((fixed.body as PaymentBody).invoices[0]).toMatchObject({ status: 'pending', folio: serie.nextFolio });
  });

  it('refuses a free line (unitPrice 0, not objeto de impuesto) with CFDI40166 before the folio: a PAC would refuse ValorUnitario 0', async () => {
    const serie = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const res = await post({
      externalId: 'T-free-line',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: recent(),
      conceptos: [
        { descripcion: 'Taza', amount: '116.00' },
        { descripcion: 'Regalo', unitPrice: '0', taxIncluded: false, taxes: { iva: 'none' } },
      ],
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toMatchObject({
      error: {
        code: 'fiscal_rules_failed',
        details: [expect.objectContaining({ rule: 'CFDI40166', path: expect.stringContaining('@ValorUnitario') })],
      },
    });
    expect(await api.prisma.payment.count({ where: { externalId: 'T-free-line' } })).toBe(0);
    expect((await api.prisma.serie.findUniqueOrThrow({ where: { id: serie.id } })).nextFolio).toBe(serie.nextFolio);
  });

  it('checks the receptor’s RFC check digit before the folio (a typo would die at the PAC); acceptCheckDigitMismatch lets one the SAT issued so through', async () => {
    const serie = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const receptor = {
      rfc: 'CACX7605101P9',
      nombre: 'XOCHILT CASAS CHAVEZ',
      regimenFiscal: '612',
      codigoPostal: '36257',
      usoCfdi: 'G03',
    };
    const body = { externalId: 'T-digit', amount: '116.00', currency: 'MXN', occurredAt: recent(), receptor };
    const typo = await post(body);
    expect(typo.statusCode).toBe(422);
    expect(typo.body).toMatchObject({
      error: {
        code: 'validation_failed',
        details: [{ path: 'receptor.rfc', message: expect.stringContaining('check digit should be 8') }],
      },
    });
    expect((await api.prisma.serie.findUniqueOrThrow({ where: { id: serie.id } })).nextFolio).toBe(serie.nextFolio);
    const accepted = await post({ ...body, receptor: { ...receptor, acceptCheckDigitMismatch: true } });
    expect(accepted.statusCode).toBe(201);
    const xml = (
      await api.prisma.invoice.findUniqueOrThrow({ where: { id: (accepted.body as PaymentBody).invoices[0]!.id } })
    ).frozenXml;
    expect(xml).toContain('Rfc="CACX7605101P9"');
  });

  it('público en general written out is público en general left out: InformacionGlobal, not a CFDI40130 refusal', async () => {
    const res = await post({
      externalId: 'T-publico',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: {
        rfc: 'XAXX010101000',
        nombre: 'PUBLICO EN GENERAL',
        regimenFiscal: '616',
        codigoPostal: '42501',
        usoCfdi: 'S01',
      },
    });
    expect(res.statusCode).toBe(201);
    const xml = (
      await api.prisma.invoice.findUniqueOrThrow({ where: { id: (res.body as PaymentBody).invoices[0]!.id } })
    ).frozenXml!;
    expect(xml).toContain('<cfdi:InformacionGlobal ');
    expect(xml).toContain('Rfc="XAXX010101000" Nombre="PUBLICO EN GENERAL"');
  });

  it('a foreign receptor: residenciaFiscal and numRegIdTrib reach the CFDI; numRegIdTrib alone is refused', async () => {
    const foreign = {
      rfc: 'XEXX010101000',
      nombre: 'ACME INC',
      regimenFiscal: '616',
      codigoPostal: '42501',
      usoCfdi: 'S01',
      residenciaFiscal: 'USA',
      numRegIdTrib: '123456789',
    };
    const res = await post({
      externalId: 'T-foreign',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: foreign,
    });
    expect(res.statusCode).toBe(201);
    const xml = (
      await api.prisma.invoice.findUniqueOrThrow({ where: { id: (res.body as PaymentBody).invoices[0]!.id } })
    ).frozenXml!;
    expect(xml).toContain('ResidenciaFiscal="USA" NumRegIdTrib="123456789"');
    const { residenciaFiscal: _r, ...withoutCountry } = foreign;
    const refused = await post({
      externalId: 'T-foreign-2',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: withoutCountry,
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toMatchObject({ error: { details: [{ path: 'receptor.residenciaFiscal' }] } });
    const mex = await post({
      externalId: 'T-foreign-3',
      amount: '116.00',
      currency: 'MXN',
      occurredAt: recent(),
      receptor: { ...foreign, residenciaFiscal: 'MEX' },
    });
    expect(mex.statusCode).toBe(422);
  });

  it('answers the same external id again with the same payment (200), and 409 when its data differs', async () => {
    const first = await post({ externalId: 'T-4', amount: '10.00', currency: 'MXN', occurredAt: recent() });
    const again = await post({ externalId: 'T-4', amount: '10.00', currency: 'MXN', occurredAt: recent() });
    expect(again.statusCode).toBe(200);
    expect((again.body as PaymentBody).id).toBe((first.body as PaymentBody).id);
    const conflict = await post({ externalId: 'T-4', amount: '11.00', currency: 'MXN', occurredAt: recent() });
    expect(conflict.statusCode).toBe(409);
    expect((conflict.body as { error: { code: string } }).error.code).toBe('payment_conflict');
  });

  it('lists payments and invoices with cursor pagination', async () => {
    const seen = new Set<string>();
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; nextCursor: string | null } = await got
        .get(`${api.url}/v1/payments`, { headers: auth, searchParams: { limit: 2, ...(cursor ? { cursor } : {}) } })
        .json();
      for (const p of page.data) seen.add(p.id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen.size).toBe(await api.prisma.payment.count());
    const invoices = await got
      .get(`${api.url}/v1/invoices`, { headers: auth, searchParams: { status: 'pending', limit: 100 } })
      .json<{ data: { status: string }[] }>();
    expect(invoices.data.length).toBe(await api.prisma.invoice.count({ where: { status: 'pending' } }));
    expect(invoices.data.every((i) => i.status === 'pending')).toBe(true);
  });

  it('finds a payment by its external id or by its invoice’s SAT UUID', async () => {
    const made = await post({ externalId: 'T-LOOKUP', amount: '58.00', currency: 'MXN', occurredAt: recent() });
    const payment = made.body as PaymentBody;
    const list = (searchParams: Record<string, string>) =>
      got.get(`${api.url}/v1/payments`, { headers: auth, searchParams }).json<{ data: { id: string }[] }>();
    expect((await list({ externalId: 'T-LOOKUP' })).data.map((p) => p.id)).toEqual([payment.id]);
    expect((await list({ externalId: 'T-LOOKUP', provider: 'api:pos' })).data.map((p) => p.id)).toEqual([payment.id]);
    expect((await list({ externalId: 'T-LOOKUP', provider: 'stripe' })).data).toEqual([]);
    const uuid = crypto.randomUUID().toUpperCase();
    await stampAsWorker(api.prisma, payment.invoices[0]!.id, uuid);
    expect((await list({ uuid: uuid.toLowerCase() })).data.map((p) => p.id)).toEqual([payment.id]);
    const invoices = await got
      .get(`${api.url}/v1/invoices`, { headers: auth, searchParams: { uuid } })
      .json<{ data: { id: string }[] }>();
    expect(invoices.data.map((i) => i.id)).toEqual([payment.invoices[0]!.id]);
  });

  it('answers 400 unknown_parameter to a filter a list does not take, naming the ones it does', async () => {
    for (const [path, bad, allowed] of [
      ['/v1/payments', 'stauts', 'limit, cursor, externalId, provider, uuid'],
      ['/v1/invoices', 'serie', 'limit, cursor, status, externalId, uuid'],
      ['/v1/webhook-endpoints', 'status', 'limit, cursor'],
      ['/v1/keys', 'limit', 'none'],
    ] as const) {
      const res = await got.get(`${api.url}${path}?${bad}=x`, {
        headers: {
          authorization: `Bearer ${path === '/v1/payments' || path === '/v1/invoices' ? KEYS.pos : KEYS.admin}`,
        },
        throwHttpErrors: false,
      });
      expect(res.statusCode).toBe(400);
      const error = (JSON.parse(res.body) as { error: { code: string; message: string; details: { path: string }[] } })
        .error;
      expect(error.code).toBe('unknown_parameter');
      expect(error.message).toContain(allowed);
      expect(error.details).toEqual([expect.objectContaining({ path: bad })]);
    }
  });
});
