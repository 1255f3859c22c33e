/**
 * The Pagos 2.0 complement's rules (matriz de errores del complemento para recepción de pagos,
 * CRP20xxx): CRP201xx the comprobante a Pago rides on, CRP202xx the complement — its Totales, each
 * Pago, its related documents and their taxes (traslados and retenciones), and the Pago's taxes.
 */
import { C_FORMA_PAGO, C_IMPUESTO, C_MONEDA, C_OBJETO_IMP, C_TIPO_FACTOR } from '../validate/sat-catalogs.ts';
import { Dec, ZERO } from '../build/money.ts';
import { NS, type XmlElement } from '../xml/xml-node.ts';
import { tasaOCuotaAllowed } from './cfdi40.ts';
import {
  a,
  at,
  checkGroupSums,
  child,
  children,
  conceptos,
  decimalsIn,
  monedaDecimals,
  num,
  pagos,
  root,
  taxLimits,
  within,
  type Located,
} from './nodes.ts';
import type { Report, RuleStatus, SatRule } from './rule.ts';

const P = NS.pago20;
const pagoNodes = (doc: XmlElement) => children(pagos(doc), 'Pago', P);
const doctos = (pago: Located) => children(pago, 'DoctoRelacionado', P);
const has = (catalog: object, key: string | undefined) => key !== undefined && Object.hasOwn(catalog, key);

type Kind = 'Traslado' | 'Retencion';
const PLURAL: Record<Kind, string> = { Traslado: 'Traslados', Retencion: 'Retenciones' };
const KIND_ES: Record<Kind, string> = { Traslado: 'Traslado', Retencion: 'Retención' };

/** A related document's TrasladoDR or RetencionDR nodes. */
function taxesDR(docto: Located, kind: Kind): Located[] {
  const imp = child(docto, 'ImpuestosDR', P);
  return children(imp ? child(imp, `${PLURAL[kind]}DR`, P) : undefined, `${kind}DR`, P);
}

/** A Pago's TrasladoP or RetencionP nodes. */
function taxesP(pago: Located, kind: Kind): Located[] {
  const imp = child(pago, 'ImpuestosP', P);
  return children(imp ? child(imp, `${PLURAL[kind]}P`, P) : undefined, `${kind}P`, P);
}

/** Every related document of every Pago, with the Pago it belongs to. */
function* eachDocto(doc: XmlElement): Generator<{ pago: Located; docto: Located }> {
  for (const pago of pagoNodes(doc)) for (const docto of doctos(pago)) yield { pago, docto };
}

/** Every TrasladoDR or RetencionDR of the document. */
function* eachTaxDR(doc: XmlElement, kind: Kind): Generator<Located> {
  for (const { docto } of eachDocto(doc)) yield* taxesDR(docto, kind);
}

/** A rule of a Pago: every rule here applies to Pagos only. */
function rule(
  code: string,
  node: string,
  es: string,
  en: string,
  status: RuleStatus,
  check: (doc: XmlElement, report: Report) => void,
): SatRule {
  return { code, node, es, en, status, applies: ['P'], check };
}

const isZero = (node: Located | undefined, name: string) => num(node, name)?.isZero() ?? false;

// ---- CRP201xx: the comprobante a Pago rides on (every value fixed: Guía de llenado) -----------------

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

const COMPROBANTE_RULES: SatRule[] = [
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

const TOTALES_RULES: SatRule[] = [
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

// ---- CRP20212–CRP20219: each Pago -------------------------------------------------------------------

/** A rule over each Pago (`bad` says whether it breaks it; a string is the detail reported). */
const pagoRule = (code: string, name: string, es: string, en: string, bad: (p: Located) => boolean | string): SatRule =>
  rule(code, `Pago/@${name}`, es, en, 'enforced', (doc, report) => {
    for (const p of pagoNodes(doc)) {
      const broken = bad(p);
      if (broken) report(at(p, name), typeof broken === 'string' ? broken : undefined);
    }
  });

const PAGO_RULES: SatRule[] = [
  pagoRule(
    'CRP20212',
    'FormaDePagoP',
    'El campo FormaDePagoP debe contener un valor del catálogo c_FormaPago distinto de "99".',
    'FormaDePagoP must be a c_FormaPago value other than 99 (a payment received has a known form).',
    (p) => !has(C_FORMA_PAGO, a(p, 'FormaDePagoP')) || a(p, 'FormaDePagoP') === '99',
  ),
  pagoRule(
    'CRP20213',
    'MonedaP',
    'El campo MonedaP debe contener un valor del catálogo c_Moneda distinto de "XXX".',
    'MonedaP must be a c_Moneda value other than XXX.',
    (p) => !has(C_MONEDA, a(p, 'MonedaP')) || a(p, 'MonedaP') === 'XXX',
  ),
  pagoRule(
    'CRP20214',
    'TipoCambioP',
    'El campo TipoCambioP se debe registrar cuando el campo MonedaP tiene un valor distinto de MXN.',
    'TipoCambioP is required (and positive) for any MonedaP other than MXN.',
    (p) => a(p, 'MonedaP') !== 'MXN' && !num(p, 'TipoCambioP')?.isGreaterThan(0),
  ),
  pagoRule(
    'CRP20215',
    'TipoCambioP',
    'El campo TipoCambioP debe tener el valor "1" cuando el campo MonedaP contenga el valor MXN.',
    'TipoCambioP is 1 for MXN.',
    (p) => a(p, 'MonedaP') === 'MXN' && !num(p, 'TipoCambioP')?.isEqualTo(1),
  ),
  pagoRule(
    'CRP20217',
    'Monto',
    'La suma de los valores registrados en el campo ImpPagado de los apartados DoctoRelacionado no es menor o igual que el valor del campo Monto.',
    'The sum of ImpPagado ÷ EquivalenciaDR over the related documents must not exceed Monto.',
    (p) => {
      let paid = ZERO;
      for (const d of doctos(p))
        paid = paid.plus((num(d, 'ImpPagado') ?? ZERO).dividedBy(num(d, 'EquivalenciaDR') ?? 1));
      const over = paid.decimalPlaces(monedaDecimals(a(p, 'MonedaP'))).isGreaterThan(num(p, 'Monto') ?? ZERO);
      return over && `related documents add up to ${paid.toFixed()}`;
    },
  ),
  pagoRule(
    'CRP20218',
    'Monto',
    'El valor del campo Monto no es mayor que cero "0".',
    'Monto must be greater than 0.',
    (p) => !num(p, 'Monto')?.isGreaterThan(0),
  ),
  pagoRule(
    'CRP20219',
    'Monto',
    'El valor del campo Monto debe tener hasta la cantidad de decimales que soporte la moneda registrada en el campo MonedaP.',
    'Monto has more decimals than MonedaP allows.',
    (p) => decimalsIn(a(p, 'Monto')) > monedaDecimals(a(p, 'MonedaP')),
  ),
];

// ---- CRP20236–CRP20247: each related document --------------------------------------------------------

/** A rule over each related document. */
const doctoRule = (
  code: string,
  name: string,
  es: string,
  en: string,
  bad: (d: Located, pago: Located) => boolean,
): SatRule =>
  rule(code, `DoctoRelacionado/@${name}`, es, en, 'enforced', (doc, report) => {
    for (const { pago, docto } of eachDocto(doc)) if (bad(docto, pago)) report(at(docto, name));
  });

const positive = (d: Located, name: string) => num(d, name)?.isGreaterThan(0) ?? false;
const tooManyDecimals = (d: Located, name: string) => decimalsIn(a(d, name)) > monedaDecimals(a(d, 'MonedaDR'));
const decimalsEs = (name: string) =>
  `El valor del campo ${name} debe tener hasta la cantidad de decimales que soporte la moneda registrada en el campo MonedaDR.`;

const DOCTO_RULES: SatRule[] = [
  doctoRule(
    'CRP20236',
    'MonedaDR',
    'El campo MonedaDR debe contener un valor del catálogo c_Moneda distinto de "XXX".',
    'MonedaDR must be a c_Moneda value other than XXX.',
    (d) => !has(C_MONEDA, a(d, 'MonedaDR')) || a(d, 'MonedaDR') === 'XXX',
  ),
  doctoRule(
    'CRP20237',
    'EquivalenciaDR',
    'El campo EquivalenciaDR se debe registrar cuando el valor del campo MonedaDR es distinto al del campo MonedaP.',
    'EquivalenciaDR is required (and positive) when MonedaDR differs from MonedaP.',
    (d, p) => a(d, 'MonedaDR') !== a(p, 'MonedaP') && !positive(d, 'EquivalenciaDR'),
  ),
  doctoRule(
    'CRP20238',
    'EquivalenciaDR',
    'El campo EquivalenciaDR debe contener el valor "1" cuando el valor del campo MonedaDR es igual al del campo MonedaP.',
    'EquivalenciaDR is 1 when MonedaDR equals MonedaP.',
    (d, p) => a(d, 'MonedaDR') === a(p, 'MonedaP') && !num(d, 'EquivalenciaDR')?.isEqualTo(1),
  ),
  doctoRule(
    'CRP20239',
    'ImpSaldoAnt',
    'El valor del campo ImpSaldoAnt debe ser mayor a cero.',
    'ImpSaldoAnt must be greater than 0.',
    (d) => !positive(d, 'ImpSaldoAnt'),
  ),
  doctoRule(
    'CRP20240',
    'ImpSaldoAnt',
    decimalsEs('ImpSaldoAnt'),
    'ImpSaldoAnt has more decimals than MonedaDR allows.',
    (d) => tooManyDecimals(d, 'ImpSaldoAnt'),
  ),
  doctoRule(
    'CRP20241',
    'ImpPagado',
    'El valor del campo ImpPagado debe ser mayor a cero.',
    'ImpPagado must be greater than 0.',
    (d) => !positive(d, 'ImpPagado'),
  ),
  doctoRule(
    'CRP20242',
    'ImpPagado',
    decimalsEs('ImpPagado'),
    'ImpPagado has more decimals than MonedaDR allows.',
    (d) => tooManyDecimals(d, 'ImpPagado'),
  ),
  doctoRule(
    'CRP20243',
    'ImpSaldoInsoluto',
    decimalsEs('ImpSaldoInsoluto'),
    'ImpSaldoInsoluto has more decimals than MonedaDR allows.',
    (d) => tooManyDecimals(d, 'ImpSaldoInsoluto'),
  ),
  doctoRule(
    'CRP20244',
    'ImpSaldoInsoluto',
    'El campo ImpSaldoInsoluto debe ser mayor o igual a cero y calcularse con la suma de los campos ImpSaldoAnt menos el ImpPagado.',
    'ImpSaldoInsoluto must be ImpSaldoAnt − ImpPagado, and not negative.',
    (d) => {
      const expected = (num(d, 'ImpSaldoAnt') ?? ZERO).minus(num(d, 'ImpPagado') ?? ZERO);
      return expected.isNegative() || !num(d, 'ImpSaldoInsoluto')?.isEqualTo(expected);
    },
  ),
  doctoRule(
    'CRP20245',
    'ObjetoImpDR',
    'El campo ObjetoImpDR, debe tener un valor del catálogo c_ObjetoImp.',
    'ObjetoImpDR is not a c_ObjetoImp value.',
    (d) => !has(C_OBJETO_IMP, a(d, 'ObjetoImpDR')),
  ),
  doctoRule(
    'CRP20246',
    'ObjetoImpDR',
    'El nodo hijo ImpuestosDR del nodo DoctoRelacionado debe existir (ObjetoImpDR 02).',
    'With ObjetoImpDR 02 the related document breaks its taxes down (ImpuestosDR).',
    (d) => a(d, 'ObjetoImpDR') === '02' && !child(d, 'ImpuestosDR', P),
  ),
  doctoRule(
    'CRP20247',
    'ObjetoImpDR',
    'El nodo hijo ImpuestosDR del nodo DoctoRelacionado no debe existir (ObjetoImpDR 01, 03, 04 o 05).',
    'With ObjetoImpDR 01, 03, 04 or 05 the related document carries no taxes.',
    (d) => ['01', '03', '04', '05'].includes(a(d, 'ObjetoImpDR') ?? '') && child(d, 'ImpuestosDR', P) !== undefined,
  ),
  rule(
    'CRP20248',
    'DoctoRelacionado/pago20:ImpuestosDR',
    'En caso de utilizar el nodo ImpuestosDR en un documento relacionado, se deben incluir impuestos de traslados y/o retenciones.',
    'An ImpuestosDR node holds traslados, retenciones or both.',
    'construction',
    (doc, report) => {
      for (const { docto } of eachDocto(doc))
        if (
          child(docto, 'ImpuestosDR', P) &&
          taxesDR(docto, 'Traslado').length + taxesDR(docto, 'Retencion').length === 0
        )
          report(`${docto.path}/pago20:ImpuestosDR`);
    },
  ),
];

// ---- CRP20249–CRP20261: the related documents' taxes, retenciones then traslados --------------------

/** The codes of the rules on a RetencionDR or TrasladoDR (the matrix numbers them in parallel). */
const DR_CODES: Record<Kind, { base: string; impuesto: string; factor: string; rate: string; importe: string }> = {
  Retencion: { base: 'CRP20249', impuesto: 'CRP20250', factor: 'CRP20251', rate: 'CRP20253', importe: 'CRP20254' },
  Traslado: { base: 'CRP20255', impuesto: 'CRP20256', factor: 'CRP20257', rate: 'CRP20260', importe: 'CRP20261' },
};

/** A rule over each TrasladoDR or RetencionDR. */
const taxDRRule = (
  kind: Kind,
  code: string,
  name: string,
  es: string,
  en: string,
  status: RuleStatus,
  bad: (t: Located) => boolean | string,
): SatRule =>
  rule(code, `${kind}DR/@${name}`, es, en, status, (doc, report) => {
    for (const t of eachTaxDR(doc, kind)) {
      const broken = bad(t);
      if (broken) report(at(t, name), typeof broken === 'string' ? broken : undefined);
    }
  });

function taxDRRules(kind: Kind): SatRule[] {
  const codes = DR_CODES[kind];
  const k = KIND_ES[kind];
  const lower = kind === 'Traslado' ? 'traslado' : 'retencion';
  return [
    taxDRRule(
      kind,
      codes.base,
      'BaseDR',
      `El valor del campo BaseDR que corresponde a ${k} debe ser mayor que cero.`,
      `A ${kind}DR’s BaseDR must be greater than 0.`,
      'enforced',
      (t) => !num(t, 'BaseDR')?.isGreaterThan(0),
    ),
    taxDRRule(
      kind,
      codes.impuesto,
      'ImpuestoDR',
      `El valor del campo ImpuestoDR que corresponde a ${k} no contiene un valor del catálogo c_Impuesto.`,
      `A ${kind}DR’s ImpuestoDR is not a c_Impuesto that applies to a ${lower}.`,
      'enforced',
      (t) => !C_IMPUESTO[a(t, 'ImpuestoDR') ?? '']?.[lower],
    ),
    taxDRRule(
      kind,
      codes.factor,
      'TipoFactorDR',
      `El valor del campo TipoFactorDR que corresponde a ${k} no contiene un valor del catálogo c_TipoFactor.`,
      `A ${kind}DR’s TipoFactorDR is not a c_TipoFactor value.`,
      'enforced',
      // Only IVA may be exempt (c_TasaOCuota has no Exento row for IEPS).
      (t) =>
        !C_TIPO_FACTOR.has(a(t, 'TipoFactorDR') ?? '') ||
        (kind === 'Traslado' && a(t, 'TipoFactorDR') === 'Exento' && a(t, 'ImpuestoDR') !== '002'),
    ),
    taxDRRule(
      kind,
      codes.rate,
      'TasaOCuotaDR',
      `El valor del campo TasaOCuotaDR que corresponde a ${k}, no contiene un valor del catálogo c_TasaOcuota o se encuentra fuera de rango.`,
      `A ${kind}DR’s TasaOCuotaDR is not a c_TasaOCuota value for its ImpuestoDR and TipoFactorDR.`,
      'enforced',
      (t) => {
        // A retención always has a rate (never Exento: CRP20252); a traslado's absence is CRP20259's.
        const rate = a(t, 'TasaOCuotaDR');
        if (rate === undefined) return kind === 'Retencion' && a(t, 'TipoFactorDR') !== 'Exento';
        return !tasaOCuotaAllowed(a(t, 'ImpuestoDR') ?? '', a(t, 'TipoFactorDR') ?? '', rate, lower);
      },
    ),
    taxDRRule(
      kind,
      codes.importe,
      'ImporteDR',
      `El valor del campo ImporteDR que corresponde a ${k} no se encuentra entre el límite inferior y superior permitido.`,
      `A ${kind}DR’s ImporteDR is outside the limits of BaseDR × TasaOCuotaDR.`,
      'construction',
      (t) => {
        const [base, rate, importe] = [a(t, 'BaseDR'), a(t, 'TasaOCuotaDR'), num(t, 'ImporteDR')];
        if (base === undefined || rate === undefined || !importe) return false;
        const { min, max } = taxLimits(base, rate, decimalsIn(a(t, 'ImporteDR')));
        return !within(importe, min, max) && `limits ${min.toFixed()}…${max.toFixed()}`;
      },
    ),
  ];
}

const TAX_DR_RULES: SatRule[] = [
  ...taxDRRules('Retencion'),
  taxDRRule(
    'Retencion',
    'CRP20252',
    'TipoFactorDR',
    'El valor registrado en el campo TipoFactorDR que corresponde a Retención debe ser distinto de Exento.',
    'A RetencionDR is never Exento.',
    'enforced',
    (t) => a(t, 'TipoFactorDR') === 'Exento',
  ),
  ...taxDRRules('Traslado'),
  ...(
    [
      [
        'CRP20258',
        true,
        'Si el valor registrado es Exento no se deben registrar los atributos TasaOCuotaDR ni ImporteDR.',
      ],
      [
        'CRP20259',
        false,
        'Si el valor registrado es Tasa o Cuota se deben registrar los atributos TasaOCuotaDR e ImporteDR.',
      ],
    ] as const
  ).map(([code, exento, es]) =>
    rule(
      code,
      'TrasladoDR',
      es,
      exento
        ? 'An Exento TrasladoDR has no TasaOCuotaDR nor ImporteDR.'
        : 'A Tasa or Cuota TrasladoDR has TasaOCuotaDR and ImporteDR.',
      'construction',
      (doc, report) => {
        for (const t of eachTaxDR(doc, 'Traslado')) {
          if ((a(t, 'TipoFactorDR') === 'Exento') !== exento) continue;
          for (const name of ['TasaOCuotaDR', 'ImporteDR'])
            if ((a(t, name) !== undefined) === exento) report(at(t, name), exento ? 'must be absent' : 'missing');
        }
      },
    ),
  ),
];

// ---- CRP20262–CRP20274: a Pago's own taxes (ImpuestosP) --------------------------------------------

/** A rule over each TrasladoP or RetencionP. */
const taxPRule = (
  kind: Kind,
  code: string,
  name: string,
  es: string,
  en: string,
  bad: (t: Located) => boolean,
): SatRule =>
  rule(code, `${kind}P/@${name}`, es, en, 'construction', (doc, report) => {
    for (const p of pagoNodes(doc)) for (const t of taxesP(p, kind)) if (bad(t)) report(at(t, name));
  });

const drKey = (t: Located) => `${a(t, 'ImpuestoDR')}|${a(t, 'TipoFactorDR')}|${a(t, 'TasaOCuotaDR') ?? ''}`;
const pKey = (t: Located) => `${a(t, 'ImpuestoP')}|${a(t, 'TipoFactorP')}|${a(t, 'TasaOCuotaP') ?? ''}`;

/**
 * A Pago's TrasladosP or RetencionesP against its documents' taxes, each divided by its document's
 * EquivalenciaDR: `sum` names what is compared (BaseP or ImporteP); `groups` also reports groups
 * written twice, with no document tax, or left out.
 */
function checkTaxesP(doc: XmlElement, kind: Kind, sum: 'BaseP' | 'ImporteP', groups: boolean, report: Report): void {
  for (const p of pagoNodes(doc)) {
    const equivalencia = new Map<XmlElement, Dec>();
    const sources = doctos(p).flatMap((d) => {
      const taxes = taxesDR(d, kind);
      for (const t of taxes) equivalencia.set(t.el, num(d, 'EquivalenciaDR') ?? new Dec(1));
      return taxes;
    });
    const retencion = kind === 'Retencion';
    checkGroupSums(
      {
        sources,
        written: taxesP(p, kind),
        keys: retencion
          ? { source: (t) => a(t, 'ImpuestoDR') ?? '', written: (t) => a(t, 'ImpuestoP') ?? '' }
          : { source: drKey, written: pKey },
        sums: { [sum]: sum === 'BaseP' ? 'BaseDR' : 'ImporteDR' },
        decimals: monedaDecimals(a(p, 'MonedaP')),
        missingAt: `${p.path}/pago20:ImpuestosP/pago20:${PLURAL[kind]}P`,
        applies: (t) => sum === 'BaseP' || a(t, 'TipoFactorP') !== 'Exento',
        groups,
        divisor: (t) => equivalencia.get(t.el) ?? new Dec(1),
      },
      report,
    );
  }
}

const TAX_P_RULES: SatRule[] = [
  taxPRule(
    'Retencion',
    'CRP20262',
    'ImpuestoP',
    'El campo ImpuestoP no contiene un valor del catálogo c_Impuesto.',
    'A RetencionP’s ImpuestoP is not a c_Impuesto that can be withheld.',
    (t) => !C_IMPUESTO[a(t, 'ImpuestoP') ?? '']?.retencion,
  ),
  rule(
    'CRP20263',
    'Pago/ImpuestosP/RetencionesP',
    'Debe haber sólo un registro por cada tipo de impuesto retenido.',
    'A Pago’s RetencionesP hold one RetencionP per impuesto.',
    'construction',
    (doc, report) => {
      for (const p of pagoNodes(doc)) {
        const seen = new Set<string>();
        for (const t of taxesP(p, 'Retencion')) {
          const key = a(t, 'ImpuestoP') ?? '';
          if (seen.has(key)) report(t.path);
          seen.add(key);
        }
      }
    },
  ),
  rule(
    'CRP20265',
    'RetencionP/@ImporteP',
    'El campo ImporteP que corresponde a Retención, no es igual a la suma de los importes de los impuestos retenidos registrados en el documento relacionado donde el impuesto sea igual al campo ImpuestoP de este elemento.',
    'A Pago’s RetencionesP are its documents’ RetencionesDR grouped by impuesto, with ImporteP their rounded sum (each ÷ EquivalenciaDR).',
    'construction',
    (doc, report) => checkTaxesP(doc, 'Retencion', 'ImporteP', true, report),
  ),
  rule(
    'CRP20266',
    'TrasladoP',
    'Deben existir los campos BaseP, ImpuestoP y TipoFactorP; si TipoFactorP es Exento no se registran TasaOCuotaP ni ImporteP.',
    'An Exento TrasladoP has no TasaOCuotaP nor ImporteP.',
    'construction',
    (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const t of taxesP(p, 'Traslado'))
          for (const name of ['TasaOCuotaP', 'ImporteP'])
            if (a(t, 'TipoFactorP') === 'Exento' && a(t, name) !== undefined) report(at(t, name), 'must be absent');
    },
  ),
  rule(
    'CRP20268',
    'Pago/ImpuestosP/TrasladosP',
    'El campo BaseP que corresponde a Traslado, no es igual a la suma de los importes de las bases registrados en los documentos relacionados donde el impuesto del documento relacionado sea igual al campo ImpuestoP de este elemento y la TasaOCuotaDR del documento relacionado sea igual al campo TasaOCuotaP de este elemento.',
    'A Pago’s TrasladosP are its documents’ TrasladosDR grouped by impuesto, factor and rate, with BaseP their rounded sum (each ÷ EquivalenciaDR).',
    'construction',
    (doc, report) => checkTaxesP(doc, 'Traslado', 'BaseP', true, report),
  ),
  taxPRule(
    'Traslado',
    'CRP20270',
    'ImpuestoP',
    'El campo ImpuestoP que corresponde a Traslado no contiene un valor del catálogo c_Impuesto.',
    'A TrasladoP’s ImpuestoP is not a c_Impuesto that can be transferred.',
    (t) => !C_IMPUESTO[a(t, 'ImpuestoP') ?? '']?.traslado,
  ),
  taxPRule(
    'Traslado',
    'CRP20272',
    'TasaOCuotaP',
    'El valor seleccionado debe corresponder a un valor del catálogo Tasa O Cuota donde la columna impuesto corresponda con el campo ImpuestoP y la columna factor corresponda con el campo TipoFactorP.',
    'A TrasladoP’s TasaOCuotaP is not a c_TasaOCuota value for its ImpuestoP and TipoFactorP.',
    (t) => {
      const rate = a(t, 'TasaOCuotaP');
      return (
        rate !== undefined && !tasaOCuotaAllowed(a(t, 'ImpuestoP') ?? '', a(t, 'TipoFactorP') ?? '', rate, 'traslado')
      );
    },
  ),
  rule(
    'CRP20274',
    'TrasladoP/@ImporteP',
    'El campo ImporteP que corresponde a Traslado, no es igual a la suma de los importes de los impuestos registrados en el documento relacionado donde el impuesto del documento relacionado sea igual al campo ImpuestoP de este elemento y la TasaOCuotaDR del documento relacionado sea igual al campo TasaOCuotaP de este elemento.',
    'Each TrasladoP carries as ImporteP the rounded sum of its group’s ImporteDR (each ÷ EquivalenciaDR).',
    'construction',
    (doc, report) => checkTaxesP(doc, 'Traslado', 'ImporteP', false, report),
  ),
];

export const PAGOS20_RULES: readonly SatRule[] = [
  ...COMPROBANTE_RULES,
  ...TOTALES_RULES,
  ...PAGO_RULES,
  ...DOCTO_RULES,
  ...TAX_DR_RULES,
  ...TAX_P_RULES,
];
