/** The comprobante a Pago rides on (CRP201xx: every value fixed by the Guía de llenado) and the complement's Totales (CRP20201–CRP20211). */
import { Dec, ZERO } from '../../build/money.ts';
import { type XmlElement } from '../../xml/xml-node.ts';
import { a, at, child, conceptos, num, pagos, root, type Located } from '../nodes.ts';
import type { SatRule } from '../rule.ts';
import { P, pagoNodes, taxesP, rule, isZero } from './helpers.ts';

/** [code, attribute, value it must have (absent: the attribute must not exist)]. */
const COMPROBANTE: readonly (readonly [string, string, string?])[] = [
  ['CRP20102', 'Exportacion', '01'],
  ['CRP20103', 'SubTotal', '0'],
  ['CRP20104', 'Moneda', 'XXX'],
  ['CRP20105', 'FormaPago'],
  ['CRP20106', 'MetodoPago'],
  ['CRP20107', 'CondicionesDePago'],
  ['CRP20108', 'Descuento'],
  ['CRP20109', 'TipoCambio'],
  ['CRP20110', 'Total', '0'],
];

const CONCEPTO: readonly (readonly [string, string, string?])[] = [
  ['CRP20113', 'ClaveProdServ', '84111506'],
  ['CRP20114', 'NoIdentificacion'],
  ['CRP20115', 'Cantidad', '1'],
  ['CRP20116', 'ClaveUnidad', 'ACT'],
  ['CRP20117', 'Unidad'],
  ['CRP20118', 'Descripcion', 'Pago'],
  ['CRP20119', 'ValorUnitario', '0'],
  ['CRP20120', 'Importe', '0'],
  ['CRP20121', 'Descuento'],
  ['CRP20122', 'ObjetoImp', '01'],
];

/** Whether the attribute is as the Guía fixes it (amounts by value: "0" and "0.00" are both zero). */
function fixed(node: Located, name: string, value: string | undefined): boolean {
  if (value === undefined) return a(node, name) === undefined;
  if (value === '0') return isZero(node, name);
  return a(node, name) === value;
}

const fixedValueRules = (
  table: readonly (readonly [string, string, string?])[],
  where: string,
  nodesOf: (doc: XmlElement) => readonly Located[],
): SatRule[] =>
  table.map(([code, name, value]) =>
    rule(
      code,
      `${where}/@${name}`,
      value === undefined ? `El campo ${name} no debe existir.` : `El campo ${name} debe contener el valor "${value}".`,
      value === undefined ? `A Pago’s ${where} has no ${name}.` : `A Pago’s ${where} has ${name} ${value}.`,
      'construction',
      (doc, report) => {
        for (const n of nodesOf(doc)) if (!fixed(n, name, value)) report(at(n, name));
      },
    ),
  );

export const COMPROBANTE_RULES: SatRule[] = [
  ...fixedValueRules(COMPROBANTE, 'Comprobante', (doc) => [root(doc)]),
  rule(
    'CRP20111',
    'Comprobante/Conceptos',
    'Solo debe existir un Concepto en el CFDI.',
    'A Pago has exactly one concepto.',
    'construction',
    (doc, report) => {
      if (conceptos(doc).length !== 1) report(`${root(doc).path}/cfdi:Conceptos`);
    },
  ),
  ...fixedValueRules(CONCEPTO, 'Concepto', conceptos),
  rule(
    'CRP20123',
    'Concepto/cfdi:Impuestos',
    'No se debe registrar el apartado de Impuestos en el CFDI.',
    'A Pago’s concepto carries no taxes.',
    'construction',
    (doc, report) => {
      for (const c of conceptos(doc)) if (child(c, 'Impuestos')) report(`${c.path}/cfdi:Impuestos`);
    },
  ),
  rule(
    // The matrix has no code of its own for a Pago without the complement (an XSD matter for a PAC).
    'CRP20999',
    'Complemento/pago20:Pagos',
    'Error no clasificado: el comprobante de pago debe contener un solo complemento de pagos con al menos un nodo Pago.',
    'A Pago carries exactly one Pagos 2.0 complement with at least one Pago.',
    'construction',
    (doc, report) => {
      if (pagoNodes(doc).length === 0) report(`${root(doc).path}/cfdi:Complemento/pago20:Pagos`);
    },
  ),
];

// ---- CRP20201–CRP20211: Totales --------------------------------------------------------------------

const IVA_RATES = [
  ['0.160000', '16'],
  ['0.080000', '8'],
  ['0.000000', '0'],
] as const;
const RETENCION_TOTALS = { '002': 'TotalRetencionesIVA', '001': 'TotalRetencionesISR', '003': 'TotalRetencionesIEPS' };

/** The Totales the Pagos' taxes call for: name → Σ (amount × TipoCambioP), unrounded. */
function expectedTotales(doc: XmlElement): Map<string, Dec> {
  const sums = new Map<string, Dec>();
  const add = (name: string, v: Dec | undefined) => sums.set(name, (sums.get(name) ?? ZERO).plus(v ?? ZERO));
  for (const p of pagoNodes(doc)) {
    const tc = num(p, 'TipoCambioP') ?? new Dec(1);
    for (const r of taxesP(p, 'Retencion')) {
      const name = RETENCION_TOTALS[a(r, 'ImpuestoP') as keyof typeof RETENCION_TOTALS];
      if (name) add(name, num(r, 'ImporteP')?.times(tc));
    }
    for (const t of taxesP(p, 'Traslado')) {
      if (a(t, 'ImpuestoP') !== '002') continue;
      if (a(t, 'TipoFactorP') === 'Exento') {
        add('TotalTrasladosBaseIVAExento', num(t, 'BaseP')?.times(tc));
        continue;
      }
      const suffix = IVA_RATES.find(([rate]) => rate === a(t, 'TasaOCuotaP'))?.[1];
      if (!suffix) continue;
      add(`TotalTrasladosBaseIVA${suffix}`, num(t, 'BaseP')?.times(tc));
      add(`TotalTrasladosImpuestoIVA${suffix}`, num(t, 'ImporteP')?.times(tc));
    }
  }
  return sums;
}

const totales = (doc: XmlElement) => child(pagos(doc) ?? root(doc), 'Totales', P);

const TOTALES: readonly (readonly [string, string, string])[] = [
  ['CRP20201', 'TotalRetencionesIVA', 'ImporteP de las retenciones de IVA (002)'],
  ['CRP20202', 'TotalRetencionesISR', 'ImporteP de las retenciones de ISR (001)'],
  ['CRP20203', 'TotalRetencionesIEPS', 'ImporteP de las retenciones de IEPS (003)'],
  ['CRP20204', 'TotalTrasladosBaseIVA16', 'BaseP de los traslados de IVA a la tasa 0.160000'],
  ['CRP20205', 'TotalTrasladosImpuestoIVA16', 'ImporteP de los traslados de IVA a la tasa 0.160000'],
  ['CRP20206', 'TotalTrasladosBaseIVA8', 'BaseP de los traslados de IVA a la tasa 0.080000'],
  ['CRP20207', 'TotalTrasladosImpuestoIVA8', 'ImporteP de los traslados de IVA a la tasa 0.080000'],
  ['CRP20208', 'TotalTrasladosBaseIVA0', 'BaseP de los traslados de IVA a la tasa 0.000000'],
  ['CRP20209', 'TotalTrasladosImpuestoIVA0', 'ImporteP de los traslados de IVA a la tasa 0.000000'],
  ['CRP20210', 'TotalTrasladosBaseIVAExento', 'BaseP de los traslados de IVA exentos'],
];

export const TOTALES_RULES: SatRule[] = [
  ...TOTALES.map(([code, name, what]) =>
    rule(
      code,
      `Pagos/Totales/@${name}`,
      `El valor del campo ${name} no es igual al redondeo de la suma del resultado de multiplicar cada uno de los ${what} por el TipoCambioP de su pago; existe solo cuando los hay.`,
      `${name} is the sum of the Pagos’ ${what.replace(/^\S+ de los /, '')} × TipoCambioP, rounded to 2 decimals, present exactly when there are such.`,
      'construction',
      (doc, report) => {
        const t = totales(doc);
        if (!t) return;
        const expected = expectedTotales(doc).get(name)?.decimalPlaces(2);
        if (expected === undefined ? a(t, name) !== undefined : !num(t, name)?.isEqualTo(expected))
          report(at(t, name), expected === undefined ? 'must be absent' : `expected ${expected.toFixed()}`);
      },
    ),
  ),
  rule(
    'CRP20211',
    'Pagos/Totales/@MontoTotalPagos',
    'El valor del campo MontoTotalPagos no es igual al redondeo de la suma del resultado de multiplicar cada uno de los campos Monto por el TipoCambioP de su pago.',
    'MontoTotalPagos is the sum of Monto × TipoCambioP over the Pagos, rounded to 2 decimals (MXN).',
    'construction',
    (doc, report) => {
      const t = totales(doc);
      if (!t) return report(`${pagos(doc)?.path ?? root(doc).path}/pago20:Totales`, 'missing');
      let expected = ZERO;
      for (const p of pagoNodes(doc))
        expected = expected.plus((num(p, 'Monto') ?? ZERO).times(num(p, 'TipoCambioP') ?? 1));
      if (!num(t, 'MontoTotalPagos')?.isEqualTo(expected.decimalPlaces(2)))
        report(at(t, 'MontoTotalPagos'), `expected ${expected.decimalPlaces(2).toFixed()}`);
    },
  ),
];
