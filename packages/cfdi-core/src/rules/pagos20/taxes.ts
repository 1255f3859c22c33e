/** The related documents' taxes (CRP20249–CRP20261) and each Pago's own (ImpuestosP: CRP20262–CRP20274). */
import { C_IMPUESTO, C_TIPO_FACTOR } from '../../validate/sat-catalogs.ts';
import { Dec } from '../../build/money.ts';
import { type XmlElement } from '../../xml/xml-node.ts';
import { tasaOCuotaAllowed } from '../cfdi40.ts';
import { a, at, checkGroupSums, decimalsIn, monedaDecimals, num, taxLimits, within, type Located } from '../nodes.ts';
import type { Report, RuleStatus, SatRule } from '../rule.ts';
import { pagoNodes, doctos, PLURAL, KIND_ES, taxesDR, taxesP, eachTaxDR, rule, type Kind } from './helpers.ts';

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

export const TAX_DR_RULES: SatRule[] = [
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

export const TAX_P_RULES: SatRule[] = [
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
