import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  attr,
  childElements,
  conceptosForSale,
  freezeComprobante,
  NS,
  parseXml,
  withRelatedUuid,
  type InvoiceRequestInput,
  type SaleLine,
} from '../src/index.ts';
import { pagoRequest } from './helpers/requests.ts';
import { TEST_EMISOR, TEST_RECEPTOR } from '@timbra/test-support';
import { loadTestCsd, SchemaValidator } from './helpers/sat.ts';

const eku = loadTestCsd('EKU9003173C9');
const cacx = loadTestCsd('CACX7605101P8');
const schema = new SchemaValidator();

/** A persona física (the CACX test CSD) selling to a persona moral (EKU) that withholds. */
const TO_A_COMPANY = {
  emisor: { rfc: 'CACX7605101P8', nombre: 'XOCHILT CASAS CHAVEZ', regimenFiscal: '612' },
  lugarExpedicion: '36257',
  receptor: {
    rfc: 'EKU9003173C9',
    nombre: 'ESCUELA KEMPER URGATE',
    domicilioFiscalReceptor: '42501',
    regimenFiscalReceptor: '601',
    usoCFDI: 'G03',
  },
};

const line = (overrides: Partial<SaleLine>): SaleLine => ({
  claveProdServ: '50202306',
  claveUnidad: 'H87',
  descripcion: 'Producto',
  cantidad: '1',
  taxIncluded: true,
  taxes: { iva: '0.160000' },
  ...overrides,
});

/** A sale of `lines` paid with `paid`, frozen (the SAT rules run on it) with the EKU test CSD unless told. */
function sale(lines: SaleLine[], paid: string, extra: Partial<InvoiceRequestInput> = {}, csd = eku) {
  const plan = conceptosForSale(lines, extra.moneda ?? 'MXN', paid);
  if (!plan.ok) throw new Error(JSON.stringify(plan.issues));
  const request: InvoiceRequestInput = {
    tipoDeComprobante: 'I',
    sourceId: `sale-${paid}-${lines.length}`,
    issuedAt: new Date(Date.now() - 60_000).toISOString(),
    serie: 'A',
    folio: '1',
    lugarExpedicion: '42501',
    formaPago: '04',
    metodoPago: 'PUE',
    emisor: { ...TEST_EMISOR },
    receptor: { ...TEST_RECEPTOR },
    conceptos: plan.conceptos,
    ...extra,
  };
  return { plan, frozen: freezeComprobante(request, csd) };
}

const taxesOf = (xml: string) => {
  const impuestos = childElements(parseXml(xml), NS.cfdi, 'Impuestos')[0];
  const group = (name: string, child: string) =>
    impuestos
      ? childElements(childElements(impuestos, NS.cfdi, name)[0] ?? impuestos, NS.cfdi, child).map((c) =>
          Object.fromEntries(c.attrs),
        )
      : [];
  return { traslados: group('Traslados', 'Traslado'), retenciones: group('Retenciones', 'Retencion'), impuestos };
};

describe('a sale described by its lines (conceptosForSale)', () => {
  it('three lines at 16%, 0% and exento: one concepto each, taxes grouped, Total = the money', async () => {
    const { frozen } = sale(
      [
        line({ descripcion: 'Audífonos', amount: '1160.00' }),
        line({
          descripcion: 'Tortillas',
          claveProdServ: '50221200',
          claveUnidad: 'KGM',
          cantidad: '2',
          unitPrice: '24.50',
          taxes: { iva: '0.000000' },
        }),
        line({ descripcion: 'Libro', claveProdServ: '55101500', amount: '349.00', taxes: { iva: 'exento' } }),
      ],
      '1558.00',
    );
    expect(frozen.total).toBe('1558.00');
    expect(frozen.subTotal).toBe('1398.00');
    const { traslados } = taxesOf(frozen.xml);
    expect(traslados).toEqual([
      { Base: '1000.00', Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: '0.160000', Importe: '160.00' },
      { Base: '49.00', Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: '0.000000', Importe: '0.00' },
      { Base: '349.00', Impuesto: '002', TipoFactor: 'Exento' },
    ]);
    expect(
      childElements(childElements(parseXml(frozen.xml), NS.cfdi, 'Conceptos')[0]!, NS.cfdi, 'Concepto'),
    ).toHaveLength(3);
    expect(await schema.validate([frozen.xml])).toEqual([]);
  });

  it('a frontera emisor at IVA 8%', async () => {
    const { frozen } = sale([line({ amount: '540.00', taxes: { iva: '0.080000' } })], '540.00', {
      lugarExpedicion: '22000',
    });
    expect(frozen.total).toBe('540.00');
    expect(taxesOf(frozen.xml).traslados).toEqual([
      { Base: '500.00', Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: '0.080000', Importe: '40.00' },
    ]);
    expect(await schema.validate([frozen.xml])).toEqual([]);
  });

  it('IEPS at a catalogue rate, with IVA charged on the price including it', async () => {
    // 100.00 + IEPS 8% 8.00 = 108.00, IVA 16% of 108.00 = 17.28: 125.28 with tax.
    const { frozen } = sale(
      [
        line({
          descripcion: 'Botana',
          claveProdServ: '50192100',
          amount: '125.28',
          taxes: { iva: '0.160000', ieps: '0.080000' },
        }),
      ],
      '125.28',
    );
    expect(frozen.subTotal).toBe('100.00');
    expect(frozen.total).toBe('125.28');
    expect(taxesOf(frozen.xml).traslados).toEqual([
      { Base: '100.00', Impuesto: '003', TipoFactor: 'Tasa', TasaOCuota: '0.080000', Importe: '8.00' },
      { Base: '108.00', Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: '0.160000', Importe: '17.28' },
    ]);
    expect(await schema.validate([frozen.xml])).toEqual([]);
  });

  it('a persona moral receptor withholding ISR and two thirds of the IVA on services', async () => {
    // 10,000.00 + IVA 1,600.00 − ISR 10% 1,000.00 − IVA 10.6667% 1,066.67 = 9,533.33 paid.
    const { frozen } = sale(
      [
        line({
          descripcion: 'Honorarios por asesoría',
          claveProdServ: '80101500',
          claveUnidad: 'E48',
          unitPrice: '10000.00',
          taxIncluded: false,
          taxes: { iva: '0.160000', retencionIsr: '0.100000', retencionIva: '0.106667' },
        }),
      ],
      '9533.33',
      {
        ...TO_A_COMPANY,
      },
      cacx,
    );
    expect(frozen.total).toBe('9533.33');
    const { retenciones, impuestos } = taxesOf(frozen.xml);
    expect(retenciones).toEqual([
      { Impuesto: '001', Importe: '1000.00' },
      { Impuesto: '002', Importe: '1066.67' },
    ]);
    expect(attr(impuestos!, 'TotalImpuestosRetenidos')).toBe('2066.67');
    expect(await schema.validate([frozen.xml])).toEqual([]);
  });

  it('a sale in dollars: USD decimals, its TipoCambio on the document', async () => {
    const { frozen } = sale([line({ amount: '58.00' }), line({ amount: '19.99', taxes: { iva: 'exento' } })], '77.99', {
      moneda: 'USD',
      tipoCambio: '17.254300',
    });
    expect(frozen.total).toBe('77.99');
    expect(frozen.xml).toContain('Moneda="USD" TipoCambio="17.254300" Total="77.99"');
    expect(await schema.validate([frozen.xml])).toEqual([]);
  });

  it('refuses lines that do not add up to what was paid, with the difference', () => {
    const plan = conceptosForSale([line({ amount: '100.00' }), line({ amount: '50.00' })], 'MXN', '149.00');
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect(plan.mismatch).toEqual({ lines: '150.00', paid: '149.00', difference: '-1.00' });
  });

  it('refuses lines that round apart on the comprobante when no line can carry the cent', () => {
    // Each 1.004 is 1.00 on its own, but the SubTotal is round(2.008) = 2.01.
    const noTax = { taxIncluded: false, taxes: {}, unitPrice: '1.004' };
    const plan = conceptosForSale([line(noTax), line(noTax)], 'MXN', '2.00');
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect(plan.mismatch).toEqual({ lines: '2.01', paid: '2.00', difference: '-0.01' });
    // With a line priced with tax beside them, that line carries it.
    const carried = conceptosForSale([line(noTax), line(noTax), line({ amount: '10.00' })], 'MXN', '12.00');
    expect(carried.ok).toBe(true);
  });

  it('refuses a descuento on a price with tax included, and prices finer than the currency', () => {
    const plan = conceptosForSale(
      [line({ amount: '100.00', descuento: '5.00' }), line({ amount: '10.005' })],
      'MXN',
      '110.01',
    );
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect(plan.issues.map((i) => i.path)).toEqual(['conceptos.0.descuento', 'conceptos.1.amount']);
  });

  it('any mix of prices with tax included: Total is the money paid to the cent, and the SAT rules hold', () => {
    const profiles = [
      { iva: '0.160000' },
      { iva: '0.080000' },
      { iva: '0.000000' },
      { iva: 'exento' },
      { iva: '0.160000', ieps: '0.080000' },
      { iva: '0.160000', ieps: '0.265000' },
      { iva: '0.160000', retencionIsr: '0.100000', retencionIva: '0.106667' },
      {},
    ];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            cents: fc.integer({ min: 1, max: 2_000_000 }),
            cantidad: fc.constantFrom('1', '2', '3', '7', '12', '0.5', '1.25'),
            profile: fc.constantFrom(...profiles),
          }),
          { minLength: 1, maxLength: 6 },
        ),
        (drawn) => {
          const lines = drawn.map((d) =>
            line({ cantidad: d.cantidad, amount: (d.cents / 100).toFixed(2), taxes: d.profile }),
          );
          const paid = (drawn.reduce((s, d) => s + d.cents, 0) / 100).toFixed(2);
          const { frozen } = sale(lines, paid);
          expect(frozen.total).toBe(paid);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('installments of a mixed-rate sale: each Pago reports its share, and the Pagos add up to the Ingreso exactly', async () => {
    // A PPD sale to a persona moral: a service with withholdings, a 0% line, an exento line, IEPS.
    const { frozen: ingreso } = sale(
      [
        line({
          descripcion: 'Servicio',
          claveProdServ: '80101500',
          claveUnidad: 'E48',
          unitPrice: '3333.33',
          taxIncluded: false,
          taxes: { iva: '0.160000', retencionIsr: '0.100000', retencionIva: '0.106667' },
        }),
        line({ descripcion: 'Alimento', amount: '1234.57', taxes: { iva: '0.000000' } }),
        line({ descripcion: 'Libro', amount: '789.01', taxes: { iva: 'exento' } }),
        line({ descripcion: 'Botana', amount: '456.78', taxes: { iva: '0.160000', ieps: '0.080000' } }),
      ],
      '5658.13',
      {
        formaPago: '99',
        metodoPago: 'PPD',
        ...TO_A_COMPANY,
      },
      cacx,
    );
    expect(ingreso.total).toBe('5658.13');
    const uuid = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F';
    const installments = ['1000.00', '2345.67', '0.01', '2312.45'];
    let saldo = '5658.13';
    const pagos: string[] = [];
    installments.forEach((amount, n) => {
      const template = pagoRequest();
      const docto = template.pago!.doctosRelacionados[0]!;
      const request: InvoiceRequestInput = {
        ...template,
        sourceId: `installment-${n}`,
        issuedAt: new Date(Date.now() - 60_000).toISOString(),
        ...TO_A_COMPANY,
        receptor: { ...TO_A_COMPANY.receptor, usoCFDI: 'CP01' },
        pago: {
          ...template.pago!,
          monto: amount,
          doctosRelacionados: [
            { ...docto, numParcialidad: n + 1, impSaldoAnt: saldo, impPagado: amount, trasladosDR: [] },
          ],
        },
      };
      saldo = (Math.round(Number(saldo) * 100 - Number(amount) * 100) / 100).toFixed(2);
      pagos.push(freezeComprobante(withRelatedUuid(request, uuid, ingreso.xml), cacx).xml);
    });
    expect(await schema.validate([ingreso.xml, ...pagos])).toEqual([]);

    // Σ over the Pagos of each TrasladoDR / RetencionDR group = the Ingreso's group, to the cent.
    const sums = new Map<string, { base: number; importe: number }>();
    for (const xml of pagos) {
      const text = xml.replace(/\n/g, '');
      for (const m of text.matchAll(
        /<pago20:(TrasladoDR|RetencionDR) BaseDR="([\d.]+)" ImpuestoDR="(\d+)" TipoFactorDR="(\w+)"(?: TasaOCuotaDR="([\d.]+)" ImporteDR="([\d.]+)")?/g,
      )) {
        const key = `${m[1]}|${m[3]}|${m[4]}|${m[5] ?? ''}`;
        const g = sums.get(key) ?? { base: 0, importe: 0 };
        g.base += Math.round(Number(m[2]) * 100);
        g.importe += Math.round(Number(m[6] ?? 0) * 100);
        sums.set(key, g);
      }
    }
    const ingresoTaxes = taxesOf(ingreso.xml).traslados;
    for (const t of ingresoTaxes) {
      const g = sums.get(`TrasladoDR|${t.Impuesto}|${t.TipoFactor}|${t.TasaOCuota ?? ''}`);
      expect({ base: g!.base, importe: g!.importe }).toEqual({
        base: Math.round(Number(t.Base) * 100),
        importe: Math.round(Number(t.Importe ?? 0) * 100),
      });
    }
    expect(ingresoTaxes.map((t) => `${t.Impuesto}|${t.TipoFactor}|${t.TasaOCuota ?? ''}`).sort()).toEqual([
      '002|Exento|',
      '002|Tasa|0.000000',
      '002|Tasa|0.160000',
      '003|Tasa|0.080000',
    ]);
    const retenido = (impuesto: string) =>
      sums.get(`RetencionDR|${impuesto}|Tasa|${impuesto === '001' ? '0.100000' : '0.106667'}`)!.importe;
    expect(retenido('001')).toBe(33333);
    expect(retenido('002')).toBe(35556);
  });
});

describe('many lines with tax included (a factura global: hundreds of tickets)', () => {
  it('comes to exactly what was paid even when the lines drift by more cents than one line can carry', () => {
    // One gross in seven at 16 % has no two-decimal base: 300 such lines drift by several cents.
    const lines = Array.from({ length: 300 }, (_, i) => line({ amount: `${100 + (i % 50)}.37` }));
    const cents = lines.reduce((total, l) => total + BigInt(l.amount!.replace('.', '')), 0n);
    const paid = `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
    expect(paid).toBe('37461.00');
    const { frozen } = sale(lines, paid);
    expect(frozen.total).toBe(paid);
    expect(frozen.xml.match(/<cfdi:Concepto /g)).toHaveLength(300);
  });
});
