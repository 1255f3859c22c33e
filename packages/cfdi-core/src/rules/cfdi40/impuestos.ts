/** The Comprobante's tax totals (CFDI40201–40221): each sum equal to its conceptos'. */
import {
  a,
  allTaxes,
  at,
  checkGroupSums,
  child,
  children,
  comprobanteImpuestos,
  conceptos,
  monedaDecimals,
  num,
  type Located,
} from '../nodes.ts';
import { R, total, checkTraslados } from './helpers.ts';
import type { SatRule } from '../rule.ts';

export const IMPUESTOS_RULES: readonly SatRule[] = [
  {
    code: 'CFDI40201',
    node: 'Comprobante/cfdi:Impuestos',
    es: 'Si el tipo de comprobante es T o P, el nodo Impuestos no debe existir (y solo existe cuando algún concepto desglosa impuestos).',
    en: 'The comprobante’s Impuestos node must be present exactly when some concepto breaks taxes down (never on a Pago).',
    status: 'construction',
    check: (doc, report) => {
      const any = conceptos(doc).some((c) => child(c, 'Impuestos'));
      const present = comprobanteImpuestos(doc) !== undefined;
      if (any !== present) report(`${R(doc).path}/cfdi:Impuestos`, any ? 'missing' : 'must be absent');
    },
  },
  {
    code: 'CFDI40211',
    node: 'Comprobante/Impuestos/Retenciones',
    es: 'El valor del campo Importe correspondiente a Retención no es igual al redondeo de la suma de los importes de los impuestos retenidos registrados en los conceptos donde el impuesto sea igual al campo Impuesto de este elemento.',
    en: 'The comprobante’s Retenciones must be the conceptos’ retenciones grouped by Impuesto, with Importe their rounded sum.',
    status: 'construction',
    check: (doc, report) => {
      const imp = comprobanteImpuestos(doc);
      const key = (t: Located) => a(t, 'Impuesto') ?? '';
      checkGroupSums(
        {
          sources: allTaxes(doc, 'Retencion'),
          written: children(imp ? child(imp, 'Retenciones') : undefined, 'Retencion'),
          keys: { source: key, written: key },
          sums: { Importe: 'Importe' },
          decimals: monedaDecimals(a(R(doc), 'Moneda')),
          missingAt: `${imp?.path ?? R(doc).path}/cfdi:Retenciones`,
        },
        report,
      );
    },
  },
  {
    code: 'CFDI40215',
    node: 'Comprobante/Impuestos/Traslados',
    es: 'El valor del campo Base que corresponde a Traslado no es igual al redondeo de la suma de los importes de las bases registradas en los conceptos donde el impuesto, el tipo factor y la tasa o cuota sean iguales a los de este elemento.',
    en: 'The comprobante’s Traslados must be the conceptos’ traslados grouped by Impuesto, TipoFactor and TasaOCuota, with Base their rounded sum.',
    status: 'construction',
    check: (doc, report) => checkTraslados(doc, 'Base', report),
  },
  {
    code: 'CFDI40221',
    node: 'Comprobante/Impuestos/Traslado/@Importe',
    es: 'El valor del campo Importe que corresponde a Traslado no es igual al redondeo de la suma de los importes de los impuestos trasladados registrados en los conceptos donde el impuesto, el tipo factor y la tasa o cuota sean iguales a los de este elemento.',
    en: 'Each of the comprobante’s Traslados must carry as Importe the rounded sum of its group’s traslado Importes.',
    status: 'construction',
    check: (doc, report) => checkTraslados(doc, 'Importe', report),
  },
  {
    code: 'CFDI40205',
    node: 'Comprobante/Impuestos/@TotalImpuestosTrasladados',
    es: 'El valor del campo TotalImpuestosTrasladados no es igual a la suma de los importes registrados en el elemento hijo Traslado (y no existe si todos son exentos).',
    en: 'TotalImpuestosTrasladados must be the sum of the comprobante’s traslado Importes (absent when every traslado is Exento).',
    status: 'construction',
    check: (doc, report) => {
      const imp = comprobanteImpuestos(doc);
      if (!imp) return;
      const taxed = children(child(imp, 'Traslados'), 'Traslado').filter((t) => a(t, 'TipoFactor') !== 'Exento');
      const written = num(imp, 'TotalImpuestosTrasladados');
      if (taxed.length === 0) {
        if (a(imp, 'TotalImpuestosTrasladados') !== undefined)
          report(at(imp, 'TotalImpuestosTrasladados'), 'must be absent');
      } else if (!written?.isEqualTo(total(taxed, 'Importe'))) report(at(imp, 'TotalImpuestosTrasladados'));
    },
  },
  {
    code: 'CFDI40203',
    node: 'Comprobante/Impuestos/@TotalImpuestosRetenidos',
    es: 'El valor del campo TotalImpuestosRetenidos no es igual a la suma de los importes registrados en el elemento hijo Retencion.',
    en: 'TotalImpuestosRetenidos must be the sum of the comprobante’s retención Importes (absent when there is none).',
    status: 'construction',
    check: (doc, report) => {
      const imp = comprobanteImpuestos(doc);
      if (!imp) return;
      const ret = children(child(imp, 'Retenciones'), 'Retencion');
      const written = num(imp, 'TotalImpuestosRetenidos');
      if (ret.length === 0) {
        if (a(imp, 'TotalImpuestosRetenidos') !== undefined)
          report(at(imp, 'TotalImpuestosRetenidos'), 'must be absent');
      } else if (!written?.isEqualTo(total(ret, 'Importe'))) report(at(imp, 'TotalImpuestosRetenidos'));
    },
  },
];
