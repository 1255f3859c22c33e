/**
 * The parts of a Pago comprobante (complemento de recepción de pagos 2.0): its one fixed concepto,
 * and the `pago20:Pagos` complemento — totals, the pago, each related document with its taxes, and
 * the pago's taxes. Attribute and element order follow Pagos20.xsd.
 */
import type { InvoiceRequest } from '../validate/request-schema.ts';
import { el, NS, type XmlElement } from '../xml/xml-node.ts';
import type { PagoAmounts } from './compute-pagos.ts';

const C = NS.cfdi;
const P = NS.pago20;

/** The fixed concepto of a Pago comprobante (Guía de llenado del complemento para recepción de pagos). */
export function conceptoPago(): XmlElement {
  return el(
    C,
    'cfdi:Conceptos',
    [],
    [
      el(C, 'cfdi:Concepto', [
        ['ClaveProdServ', '84111506'],
        ['Cantidad', '1'],
        ['ClaveUnidad', 'ACT'],
        ['Descripcion', 'Pago'],
        ['ValorUnitario', '0'],
        ['Importe', '0'],
        ['ObjetoImp', '01'],
      ]),
    ],
  );
}

/** A wrapper element around `items`, or nothing when there are none (the schema has no empty lists). */
function listOf<T>(name: string, items: readonly T[], item: (t: T) => XmlElement): XmlElement[] {
  return items.length > 0 ? [el(P, name, [], items.map(item))] : [];
}

type TaxDR = PagoAmounts['doctos'][number]['trasladosDR'][number];
const taxDR = (name: string) => (t: TaxDR) =>
  el(P, name, [
    ['BaseDR', t.base],
    ['ImpuestoDR', t.impuesto],
    ['TipoFactorDR', t.tipoFactor],
    ['TasaOCuotaDR', t.tasaOCuota],
    ['ImporteDR', t.importe],
  ]);

/** A related document (the Ingreso paid) with its ImpuestosDR: retenciones, then traslados. */
function doctoRelacionado(d: PagoAmounts['doctos'][number]): XmlElement {
  const taxes = [
    ...listOf('pago20:RetencionesDR', d.retencionesDR, taxDR('pago20:RetencionDR')),
    ...listOf('pago20:TrasladosDR', d.trasladosDR, taxDR('pago20:TrasladoDR')),
  ];
  return el(
    P,
    'pago20:DoctoRelacionado',
    [
      ['IdDocumento', d.source.idDocumento.toUpperCase()],
      ['Serie', d.source.serie],
      ['Folio', d.source.folio],
      ['MonedaDR', d.source.monedaDR],
      ['EquivalenciaDR', d.equivalenciaDR],
      ['NumParcialidad', String(d.source.numParcialidad)],
      ['ImpSaldoAnt', d.impSaldoAnt],
      ['ImpPagado', d.impPagado],
      ['ImpSaldoInsoluto', d.impSaldoInsoluto],
      ['ObjetoImpDR', d.objetoImpDR],
    ],
    taxes.length > 0 ? [el(P, 'pago20:ImpuestosDR', [], taxes)] : [],
  );
}

/** The pago's own ImpuestosP (retenciones, then traslados), or nothing. */
function impuestosP(p: PagoAmounts): XmlElement[] {
  const taxes = [
    ...listOf('pago20:RetencionesP', p.retencionesP, (r) =>
      el(P, 'pago20:RetencionP', [
        ['ImpuestoP', r.impuesto],
        ['ImporteP', r.importe],
      ]),
    ),
    ...listOf('pago20:TrasladosP', p.trasladosP, (t) =>
      el(P, 'pago20:TrasladoP', [
        ['BaseP', t.base],
        ['ImpuestoP', t.impuesto],
        ['TipoFactorP', t.tipoFactor],
        ['TasaOCuotaP', t.tasaOCuota],
        ['ImporteP', t.importe],
      ]),
    ),
  ];
  return taxes.length > 0 ? [el(P, 'pago20:ImpuestosP', [], taxes)] : [];
}

/** The `pago20:Pagos` complemento of one pago. */
export function pagos(p: PagoAmounts, fechaPago: string, r: InvoiceRequest): XmlElement {
  const pago = r.pago;
  if (!pago) throw new Error('pagos() needs request.pago');
  return el(
    P,
    'pago20:Pagos',
    [['Version', '2.0']],
    [
      el(P, 'pago20:Totales', p.totales),
      el(
        P,
        'pago20:Pago',
        [
          ['FechaPago', fechaPago],
          ['FormaDePagoP', pago.formaDePagoP],
          ['MonedaP', pago.monedaP],
          ['TipoCambioP', p.tipoCambioP],
          ['Monto', p.monto],
          ['NumOperacion', pago.numOperacion],
        ],
        [...p.doctos.map(doctoRelacionado), ...impuestosP(p)],
      ),
    ],
  );
}
