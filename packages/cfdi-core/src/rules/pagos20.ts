/**
 * The Pagos 2.0 complement's rules (matriz de errores del complemento para recepción de pagos,
 * CRP20xxx) that apply to the Pagos Timbra issues: one Pago per comprobante, documents in the
 * payment's currency, IVA traslados.
 */
import { C_FORMA_PAGO, C_MONEDA, C_OBJETO_IMP } from '../validate/sat-catalogs.ts';
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
import type { SatRule } from './rule.ts';

const P = NS.pago20;
const pagoNodes = (doc: XmlElement) => children(pagos(doc), 'Pago', P);
const doctos = (pago: Located) => children(pago, 'DoctoRelacionado', P);
const trasladosDR = (docto: Located) => {
  const imp = child(docto, 'ImpuestosDR', P);
  return children(imp ? child(imp, 'TrasladosDR', P) : undefined, 'TrasladoDR', P);
};
const has = (catalog: object, key: string | undefined) => key !== undefined && Object.hasOwn(catalog, key);

/** The fixed concepto a Pago carries (Guía de llenado del complemento para recepción de pagos). */
const CONCEPTO_PAGO: Readonly<Record<string, string>> = {
  ClaveProdServ: '84111506',
  Cantidad: '1',
  ClaveUnidad: 'ACT',
  Descripcion: 'Pago',
  ValorUnitario: '0',
  Importe: '0',
  ObjetoImp: '01',
};

const IVA_TOTALES = [
  ['0.160000', '16'],
  ['0.080000', '8'],
  ['0.000000', '0'],
] as const;

export const PAGOS20_RULES: readonly SatRule[] = [
  {
    code: 'CRP20101',
    node: 'Comprobante/Conceptos',
    es: 'El comprobante de pago debe tener un solo concepto con ClaveProdServ 84111506, Cantidad 1, ClaveUnidad ACT, Descripcion Pago, ValorUnitario 0, Importe 0 y ObjetoImp 01, sin impuestos.',
    en: 'A Pago has exactly one concepto, the fixed one (84111506, 1, ACT, Pago, 0, 0, ObjetoImp 01), without taxes.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      const list = conceptos(doc);
      if (list.length !== 1) report(`${root(doc).path}/cfdi:Conceptos`, 'exactly one concepto');
      for (const c of list) {
        for (const [name, value] of Object.entries(CONCEPTO_PAGO)) if (a(c, name) !== value) report(at(c, name));
        if (child(c, 'Impuestos')) report(`${c.path}/cfdi:Impuestos`);
      }
    },
  },
  {
    code: 'CRP20102',
    node: 'Complemento/pago20:Pagos',
    es: 'Si el tipo de comprobante es P, debe existir un solo complemento de pagos con al menos un nodo Pago.',
    en: 'A Pago carries exactly one Pagos 2.0 complement with at least one Pago.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      const p = pagos(doc);
      if (!p || pagoNodes(doc).length === 0) report(`${root(doc).path}/cfdi:Complemento/pago20:Pagos`);
    },
  },
  {
    code: 'CRP20201',
    node: 'Pagos/Totales/@MontoTotalPagos',
    es: 'El campo MontoTotalPagos debe ser igual a la suma de los campos Monto de los pagos, por su TipoCambioP, redondeada a 2 decimales.',
    en: 'MontoTotalPagos must be the sum of Monto × TipoCambioP over the Pagos, rounded to 2 decimals (MXN).',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      const totales = child(pagos(doc) ?? root(doc), 'Totales', P);
      if (!totales) return report(`${pagos(doc)?.path ?? root(doc).path}/pago20:Totales`, 'missing');
      let expected = ZERO;
      for (const p of pagoNodes(doc))
        expected = expected.plus((num(p, 'Monto') ?? ZERO).times(num(p, 'TipoCambioP') ?? 1));
      if (!num(totales, 'MontoTotalPagos')?.isEqualTo(expected.decimalPlaces(2)))
        report(at(totales, 'MontoTotalPagos'), `expected ${expected.decimalPlaces(2).toFixed()}`);
    },
  },
  {
    code: 'CRP20202',
    node: 'Pagos/Totales/@TotalTraslados*',
    es: 'Los campos TotalTrasladosBaseIVA* y TotalTrasladosImpuestoIVA* deben ser la suma de los traslados de IVA de los pagos a esa tasa, por su TipoCambioP, y existir solo cuando hay tales traslados.',
    en: 'The Totales IVA fields must be the sums of the Pagos’ IVA TrasladosP at each rate × TipoCambioP, present exactly when there are such traslados.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      const totales = child(pagos(doc) ?? root(doc), 'Totales', P);
      if (!totales) return;
      const sums = new Map<string, Dec>();
      const add = (name: string, v: Dec) => sums.set(name, (sums.get(name) ?? ZERO).plus(v));
      for (const p of pagoNodes(doc)) {
        const tc = num(p, 'TipoCambioP') ?? new Dec(1);
        const imp = child(p, 'ImpuestosP', P);
        for (const t of children(imp ? child(imp, 'TrasladosP', P) : undefined, 'TrasladoP', P)) {
          if (a(t, 'ImpuestoP') !== '002') continue;
          if (a(t, 'TipoFactorP') === 'Exento') {
            add('TotalTrasladosBaseIVAExento', (num(t, 'BaseP') ?? ZERO).times(tc));
            continue;
          }
          const suffix = IVA_TOTALES.find(([rate]) => rate === a(t, 'TasaOCuotaP'))?.[1];
          if (!suffix) continue;
          add(`TotalTrasladosBaseIVA${suffix}`, (num(t, 'BaseP') ?? ZERO).times(tc));
          add(`TotalTrasladosImpuestoIVA${suffix}`, (num(t, 'ImporteP') ?? ZERO).times(tc));
        }
      }
      const names = [
        ...IVA_TOTALES.flatMap(([, s]) => [`TotalTrasladosBaseIVA${s}`, `TotalTrasladosImpuestoIVA${s}`]),
        'TotalTrasladosBaseIVAExento',
      ];
      for (const name of names) {
        const expected = sums.get(name);
        const written = num(totales, name);
        if (expected === undefined ? a(totales, name) !== undefined : !written?.isEqualTo(expected.decimalPlaces(2)))
          report(
            at(totales, name),
            expected === undefined ? 'must be absent' : `expected ${expected.decimalPlaces(2).toFixed()}`,
          );
      }
    },
  },
  {
    code: 'CRP20203',
    node: 'Pago/@FormaDePagoP',
    es: 'El campo FormaDePagoP debe contener un valor del catálogo c_FormaPago distinto de 99.',
    en: 'FormaDePagoP must be a c_FormaPago value other than 99 (a payment received has a known form).',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc)) {
        const f = a(p, 'FormaDePagoP');
        if (!has(C_FORMA_PAGO, f) || f === '99') report(at(p, 'FormaDePagoP'));
      }
    },
  },
  {
    code: 'CRP20204',
    node: 'Pago/@MonedaP',
    es: 'El campo MonedaP debe contener un valor del catálogo c_Moneda distinto de XXX.',
    en: 'MonedaP must be a c_Moneda value other than XXX.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc)) {
        const m = a(p, 'MonedaP');
        if (!has(C_MONEDA, m) || m === 'XXX') report(at(p, 'MonedaP'));
      }
    },
  },
  {
    code: 'CRP20205',
    node: 'Pago/@TipoCambioP',
    es: 'Si MonedaP es MXN, TipoCambioP debe ser 1; si es distinta, TipoCambioP debe existir.',
    en: 'TipoCambioP is 1 for MXN and required for any other MonedaP.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc)) {
        const tc = num(p, 'TipoCambioP');
        if (a(p, 'MonedaP') === 'MXN' ? !tc?.isEqualTo(1) : !tc?.isGreaterThan(0)) report(at(p, 'TipoCambioP'));
      }
    },
  },
  {
    code: 'CRP20206',
    node: 'Pago/@Monto',
    es: 'El campo Monto debe ser mayor que cero y tener hasta la cantidad de decimales que soporta MonedaP.',
    en: 'Monto must be greater than 0, with at most the decimals MonedaP allows.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        if (!num(p, 'Monto')?.isGreaterThan(0) || decimalsIn(a(p, 'Monto')) > monedaDecimals(a(p, 'MonedaP')))
          report(at(p, 'Monto'));
    },
  },
  {
    code: 'CRP20207',
    node: 'Pago/@Monto',
    es: 'La suma de los valores de ImpPagado entre EquivalenciaDR de los documentos relacionados debe ser menor o igual que el valor del campo Monto.',
    en: 'The sum of ImpPagado ÷ EquivalenciaDR over the related documents must not exceed Monto.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc)) {
        let paid = ZERO;
        for (const d of doctos(p))
          paid = paid.plus((num(d, 'ImpPagado') ?? ZERO).dividedBy(num(d, 'EquivalenciaDR') ?? 1));
        if (paid.decimalPlaces(monedaDecimals(a(p, 'MonedaP'))).isGreaterThan(num(p, 'Monto') ?? ZERO))
          report(at(p, 'Monto'), `related documents add up to ${paid.toFixed()}`);
      }
    },
  },
  {
    code: 'CRP20208',
    node: 'DoctoRelacionado/@EquivalenciaDR',
    es: 'Si MonedaDR es igual a MonedaP, EquivalenciaDR debe ser 1.',
    en: 'EquivalenciaDR must be 1 when MonedaDR equals MonedaP (Timbra relates documents in the payment’s currency only).',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p)) {
          if (a(d, 'MonedaDR') !== a(p, 'MonedaP')) report(at(d, 'MonedaDR'), 'must equal MonedaP');
          else if (!num(d, 'EquivalenciaDR')?.isEqualTo(1)) report(at(d, 'EquivalenciaDR'));
        }
    },
  },
  {
    code: 'CRP20209',
    node: 'DoctoRelacionado/@ImpPagado',
    es: 'Los campos ImpSaldoAnt e ImpPagado deben ser mayores que cero y tener hasta la cantidad de decimales que soporta MonedaDR.',
    en: 'ImpSaldoAnt and ImpPagado must be greater than 0, with at most the decimals MonedaDR allows.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p))
          for (const name of ['ImpSaldoAnt', 'ImpPagado'])
            if (!num(d, name)?.isGreaterThan(0) || decimalsIn(a(d, name)) > monedaDecimals(a(d, 'MonedaDR')))
              report(at(d, name));
    },
  },
  {
    code: 'CRP20210',
    node: 'DoctoRelacionado/@ImpSaldoInsoluto',
    es: 'El campo ImpSaldoInsoluto debe ser mayor o igual a cero y calcularse como ImpSaldoAnt menos ImpPagado.',
    en: 'ImpSaldoInsoluto must be ImpSaldoAnt − ImpPagado, and not negative.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p)) {
          const expected = (num(d, 'ImpSaldoAnt') ?? ZERO).minus(num(d, 'ImpPagado') ?? ZERO);
          const written = num(d, 'ImpSaldoInsoluto');
          if (expected.isNegative() || !written?.isEqualTo(expected)) report(at(d, 'ImpSaldoInsoluto'));
        }
    },
  },
  {
    code: 'CRP20211',
    node: 'DoctoRelacionado/@ObjetoImpDR',
    es: 'El campo ObjetoImpDR debe contener un valor del catálogo c_ObjetoImp; si es 02, el nodo ImpuestosDR debe existir, y en otro caso no.',
    en: 'ObjetoImpDR must be a c_ObjetoImp value; ImpuestosDR is present exactly when it is 02.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p)) {
          const o = a(d, 'ObjetoImpDR');
          const hasTaxes = child(d, 'ImpuestosDR', P) !== undefined;
          if (!has(C_OBJETO_IMP, o) || (o === '02') !== hasTaxes) report(at(d, 'ObjetoImpDR'));
        }
    },
  },
  {
    code: 'CRP20212',
    node: 'TrasladoDR/@TasaOCuotaDR',
    es: 'Los campos ImpuestoDR, TipoFactorDR y TasaOCuotaDR deben corresponder a un valor del catálogo c_TasaOCuota para traslados.',
    en: 'A TrasladoDR’s ImpuestoDR, TipoFactorDR and TasaOCuotaDR must be a c_TasaOCuota combination for traslados.',
    status: 'enforced',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p))
          for (const t of trasladosDR(d)) {
            const factor = a(t, 'TipoFactorDR') ?? '';
            const rate = a(t, 'TasaOCuotaDR');
            const ok =
              factor === 'Exento'
                ? a(t, 'ImpuestoDR') === '002' && rate === undefined && a(t, 'ImporteDR') === undefined
                : rate !== undefined && tasaOCuotaAllowed(a(t, 'ImpuestoDR') ?? '', factor, rate, 'traslado');
            if (!ok) report(at(t, 'TasaOCuotaDR'));
          }
    },
  },
  {
    code: 'CRP20213',
    node: 'TrasladoDR/@ImporteDR',
    es: 'El valor del campo ImporteDR no se encuentra entre el límite inferior y superior permitido (BaseDR por TasaOCuotaDR).',
    en: 'A TrasladoDR’s ImporteDR is outside the limits of BaseDR × TasaOCuotaDR.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc))
        for (const d of doctos(p))
          for (const t of trasladosDR(d)) {
            const base = a(t, 'BaseDR');
            const rate = a(t, 'TasaOCuotaDR');
            const importe = num(t, 'ImporteDR');
            if (base === undefined || rate === undefined || !importe) continue;
            const { min, max } = taxLimits(base, rate, decimalsIn(a(t, 'ImporteDR')));
            if (!within(importe, min, max)) report(at(t, 'ImporteDR'), `limits ${min.toFixed()}…${max.toFixed()}`);
          }
    },
  },
  {
    code: 'CRP20214',
    node: 'Pago/ImpuestosP/TrasladosP',
    es: 'Los traslados del pago deben agrupar por ImpuestoP, TipoFactorP y TasaOCuotaP la suma redondeada de los traslados de los documentos relacionados.',
    en: 'A Pago’s TrasladosP must be its documents’ TrasladosDR grouped by impuesto, factor and rate, with BaseP and ImporteP their rounded sums.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      for (const p of pagoNodes(doc)) {
        const imp = child(p, 'ImpuestosP', P);
        // Timbra relates documents in the payment's currency only (EquivalenciaDR 1, CRP20208).
        checkGroupSums(
          doctos(p).flatMap(trasladosDR),
          children(imp ? child(imp, 'TrasladosP', P) : undefined, 'TrasladoP', P),
          {
            source: (t) => `${a(t, 'ImpuestoDR')}|${a(t, 'TipoFactorDR')}|${a(t, 'TasaOCuotaDR') ?? ''}`,
            written: (t) => `${a(t, 'ImpuestoP')}|${a(t, 'TipoFactorP')}|${a(t, 'TasaOCuotaP') ?? ''}`,
          },
          { BaseP: 'BaseDR', ImporteP: 'ImporteDR' },
          monedaDecimals(a(p, 'MonedaP')),
          `${p.path}/pago20:ImpuestosP`,
          report,
          (t, name) => name !== 'ImporteP' || a(t, 'TipoFactorP') !== 'Exento',
        );
      }
    },
  },
];
