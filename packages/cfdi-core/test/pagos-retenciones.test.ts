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

const withRetenciones = ingresoArbitrary(4)
  .map((r) => ({ ...r, metodoPago: 'PPD', formaPago: '99' }))
  .filter((r) => (r.conceptos ?? []).some((c) => (c.retenciones ?? []).length > 0));

test('the Pagos of an Ingreso with retenciones pass every rule and add up to its retenciones', () => {
  fc.assert(
    fc.property(
      withRetenciones,
      fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 3 }),
      (request, weights) => {
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
        const reported = new Map<string, Dec>();
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
          // Freezing runs every rule (CRP20201–20203, CRP20249–20254, CRP20262–20265 among them).
          const doc = parseXml(freezeComprobante(pago, csd).xml);
          for (const r of descendants(doc, NS.pago20, 'RetencionDR')) {
            const key = `${attr(r, 'ImpuestoDR')}|${attr(r, 'TasaOCuotaDR')}`;
            reported.set(key, (reported.get(key) ?? new Dec(0)).plus(attr(r, 'ImporteDR') ?? 0));
          }
          expect(childElements(doc, NS.cfdi, 'Complemento')).toHaveLength(1);
          paid.push(installment);
          saldo = saldo.minus(amount);
        }
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
    // Always tried first: a tiny taxed line beside a large untaxed one, paid 5% then 95% — the first
    // Pago's share of every tax rounds to nothing (its DoctoRelacionado is then ObjetoImpDR 01).
    { numRuns: 60, examples: [[TINY_TAXED_LINE, [1, 19]]] },
  );
});
