/**
 * A PPD Ingreso with retenciones paid in installments: each Pago reports its share of every
 * retención (RetencionesDR, RetencionesP, TotalRetenciones*), passes the Pagos 2.0 rules on them
 * (freezing runs every rule), and the installments' shares add up to the Ingreso's retenciones.
 */
import { expect, test } from '@jest/globals';
import fc from 'fast-check';
import { loadTestCsd } from '@timbra/test-support';
import {
  attr,
  childElements,
  freezeComprobante,
  NS,
  parseXml,
  relatedTaxes,
  type InvoiceRequestInput,
  type XmlElement,
} from '../src/index.ts';
import { Dec } from '../src/build/money.ts';
import { ingresoArbitrary } from './helpers/arbitraries.ts';
import { pagoRequest } from './helpers/requests.ts';

const csd = loadTestCsd('EKU9003173C9');
const UUID = '6F1D3C7E-2B4A-4C8D-9E0F-1A2B3C4D5E6F';

/** Every element named `local` under `el`, at any depth. */
function descendants(el: XmlElement, ns: string, local: string): XmlElement[] {
  return el.children.flatMap((c) =>
    c.kind === 'element' ? [...(c.ns === ns && c.local === local ? [c] : []), ...descendants(c, ns, local)] : [],
  );
}

const TINY_TAXED_LINE: InvoiceRequestInput = {
  tipoDeComprobante: 'I',
  sourceId: 'tiny-taxed-line',
  issuedAt: '2024-01-01T00:00:00.000Z',
  lugarExpedicion: '06600',
  formaPago: '99',
  metodoPago: 'PPD',
  emisor: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601' },
  receptor: {
    rfc: 'CACX7605101P8',
    nombre: 'XOCHILT CASAS CHAVEZ',
    domicilioFiscalReceptor: '36257',
    regimenFiscalReceptor: '612',
    usoCFDI: 'G03',
  },
  conceptos: [
    {
      claveProdServ: '01010101',
      cantidad: '1',
      claveUnidad: 'H87',
      descripcion: 'a',
      valorUnitario: '1000000',
      objetoImp: '01',
    },
    {
      claveProdServ: '01010101',
      cantidad: '0.1',
      claveUnidad: 'H87',
      descripcion: 'b',
      valorUnitario: '1',
      objetoImp: '02',
      traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      retenciones: [{ impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.100000' }],
    },
  ],
};

/**
 * 0.34 paid 0.17, 0.11, 0.06: the middle Pago's share of the 0.03 retención (10%) rounds to nothing
 * while its share of the base is 0.11, and no BaseDR above zero allows ImporteDR 0.00 at 10%.
 */
const TINY_RETENCION: InvoiceRequestInput = {
  ...TINY_TAXED_LINE,
  sourceId: 'tiny-retencion',
  conceptos: [
    {
      claveProdServ: '01010101',
      cantidad: '0.4',
      claveUnidad: 'H87',
      descripcion: 'a',
      valorUnitario: '0.838',
      objetoImp: '02',
      traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.080000' }],
      retenciones: [{ impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.100000' }],
    },
  ],
};

/**
 * 0.16 (0.056 taxed at 16%, retained 1.25% and 10.6667%, beside 0.10 untaxed) paid 0.07, 0.01, 0.08:
 * the middle Pago's share of the 0.01 IVA retenido is 0.01 while its share of the 0.06 base rounds
 * to nothing at two decimals — it reports the 0.01 on its share at six (0.003750; Anexo 20's limits
 * round the upper bound up, so 0.01 is within them).
 */
const BASE_ROUNDS_AWAY: InvoiceRequestInput = {
  ...TINY_TAXED_LINE,
  sourceId: 'base-rounds-away',
  conceptos: [
    {
      claveProdServ: '01010101',
      cantidad: '0.2',
      claveUnidad: 'H87',
      descripcion: 'a',
      valorUnitario: '0.28',
      objetoImp: '02',
      traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' }],
      retenciones: [
        { impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.012500' },
        { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.106667' },
      ],
    },
    {
      claveProdServ: '01010101',
      cantidad: '1',
      claveUnidad: 'H87',
      descripcion: 'a',
      valorUnitario: '0.1',
      objetoImp: '01',
    },
  ],
};

const withRetenciones = ingresoArbitrary(4)
  .map((r) => ({ ...r, metodoPago: 'PPD', formaPago: '99' }))
  .filter((r) => (r.conceptos ?? []).some((c) => (c.retenciones ?? []).length > 0));

/**
 * The Ingreso frozen from `request`, paid in installments in proportion to `weights` (to the cent,
 * the last one settling it): each Pago frozen, which runs every rule (CRP20201–20203, CRP20249–20254,
 * CRP20262–20265 among them). Returns the Ingreso's related taxes and the Pagos' documents.
 */
function installments(request: InvoiceRequestInput, weights: readonly number[]) {
  const ingreso = freezeComprobante(request, csd).xml;
  const taxes = relatedTaxes(ingreso);
  const totalCents = new Dec(attr(parseXml(ingreso), 'Total') ?? '0').shiftedBy(2);
  const sum = weights.reduce((s, w) => s + w, 0);
  let left = totalCents;
  const amounts = weights.map((w, i) => {
    const cents = i === weights.length - 1 ? left : totalCents.times(w).dividedToIntegerBy(sum);
    left = left.minus(cents);
    return cents.shiftedBy(-2);
  });
  const paid: { impSaldoAnt: string; impPagado: string }[] = [];
  const pagos: XmlElement[] = [];
  let saldo = totalCents.shiftedBy(-2);
  for (const [i, amount] of amounts.entries()) {
    if (!amount.isGreaterThan(0)) continue;
    const base = pagoRequest(UUID);
    const installment = { impSaldoAnt: saldo.toFixed(2), impPagado: amount.toFixed(2) };
    const pago: InvoiceRequestInput = {
      ...base,
      sourceId: `installment-${i}`,
      pago: {
        ...base.pago!,
        monto: amount.toFixed(2),
        doctosRelacionados: [
          {
            idDocumento: UUID,
            monedaDR: 'MXN',
            numParcialidad: paid.length + 1,
            ...installment,
            ...taxes,
            ...(paid.length > 0 ? { pagosAnteriores: [...paid] } : {}),
          },
        ],
      },
    };
    const doc = parseXml(freezeComprobante(pago, csd).xml);
    expect(childElements(doc, NS.cfdi, 'Complemento')).toHaveLength(1);
    pagos.push(doc);
    paid.push(installment);
    saldo = saldo.minus(amount);
  }
  return { taxes, pagos };
}

/** What the Pagos report of each retención (`impuesto|tasa` → the sum of its ImporteDR). */
function reportedRetenciones(pagos: readonly XmlElement[]): Map<string, Dec> {
  const reported = new Map<string, Dec>();
  for (const r of pagos.flatMap((doc) => descendants(doc, NS.pago20, 'RetencionDR'))) {
    const key = `${attr(r, 'ImpuestoDR')}|${attr(r, 'TasaOCuotaDR')}`;
    reported.set(key, (reported.get(key) ?? new Dec(0)).plus(attr(r, 'ImporteDR') ?? 0));
  }
  return reported;
}

/** Each Pago's retenciones as `impuesto|tasa BaseDR ImporteDR`, and its ObjetoImpDR. */
function retencionesOf(pagos: readonly XmlElement[]) {
  return pagos.map((doc) => ({
    objetoImpDR: attr(descendants(doc, NS.pago20, 'DoctoRelacionado')[0]!, 'ObjetoImpDR'),
    retenciones: descendants(doc, NS.pago20, 'RetencionDR').map(
      (r) => `${attr(r, 'ImpuestoDR')}|${attr(r, 'TasaOCuotaDR')} ${attr(r, 'BaseDR')} ${attr(r, 'ImporteDR')}`,
    ),
  }));
}

test('a Pago leaves out a tax its share of which rounds to nothing, and keeps one whose base alone does', () => {
  // 5% of a 0.10 taxed line beside 1,000,000 untaxed: nothing of any tax, so ObjetoImpDR 01.
  expect(retencionesOf(installments(TINY_TAXED_LINE, [1, 19]).pagos)).toEqual([
    { objetoImpDR: '01', retenciones: [] },
    { objetoImpDR: '02', retenciones: ['001|0.100000 0.10 0.01'] },
  ]);
  // The middle installment's part of the 0.03 retención is 0.00 on a base of 0.11: left out of it.
  expect(retencionesOf(installments(TINY_RETENCION, [18, 12, 5]).pagos)).toEqual([
    { objetoImpDR: '02', retenciones: ['001|0.100000 0.17 0.02'] },
    { objetoImpDR: '02', retenciones: [] },
    { objetoImpDR: '02', retenciones: ['001|0.100000 0.17 0.01'] },
  ]);
  // The middle installment's part of the 0.01 IVA retenido is 0.01 on a base that rounds to nothing
  // at two decimals.
  const { pagos } = installments(BASE_ROUNDS_AWAY, [7, 1, 7]);
  expect(retencionesOf(pagos)[1]).toEqual({
    objetoImpDR: '02',
    retenciones: ['002|0.106667 0.003750 0.01'],
  });
  expect(reportedRetenciones(pagos).get('002|0.106667')?.toFixed(2)).toBe('0.01');
});

test('the Pagos of an Ingreso with retenciones pass every rule and add up to its retenciones', () => {
  fc.assert(
    fc.property(
      withRetenciones,
      fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 3 }),
      (request, weights) => {
        const { taxes, pagos } = installments(request, weights);
        const reported = reportedRetenciones(pagos);
        // What the installments report of each retención is the Ingreso's, to the cent.
        for (const r of taxes.retencionesDR) {
          const key = `${r.impuesto}|${r.tasaOCuota}`;
          expect([key, (reported.get(key) ?? new Dec(0)).toFixed(2)]).toEqual([
            key,
            new Dec(r.documento!.importe).toFixed(2),
          ]);
        }
      },
    ),
    // Always tried first: the three cases above.
    {
      numRuns: 60,
      examples: [
        [TINY_TAXED_LINE, [1, 19]],
        [TINY_RETENCION, [18, 12, 5]],
        [BASE_ROUNDS_AWAY, [7, 1, 7]],
      ],
    },
  );
});
