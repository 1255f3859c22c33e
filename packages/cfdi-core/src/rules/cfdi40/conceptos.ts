/** The Conceptos and their taxes (CFDI40162–40199). */
import { C_CLAVE_UNIDAD, C_IMPUESTO, C_OBJETO_IMP, C_TIPO_FACTOR } from '../../validate/sat-catalogs.ts';
import { ZERO } from '../../build/money.ts';
import { a, allTaxes, at, child, conceptos, decimalsIn, num, productLimits, tipoOf, within } from '../nodes.ts';
import { has, tasaOCuotaAllowed, rateAndAmount, checkTaxImportes } from './helpers.ts';
import type { SatRule } from '../rule.ts';

export const CONCEPTOS_RULES: readonly SatRule[] = [
  {
    code: 'CFDI40162',
    node: 'Concepto/@ClaveProdServ',
    es: 'El campo ClaveProdServ no contiene un valor del catálogo c_ClaveProdServ.',
    en: 'ClaveProdServ is not a c_ClaveProdServ value (checked by shape unless the operator supplied the catalogue).',
    status: 'needs-sat-data',
    check: (doc, report, ctx) => {
      for (const c of conceptos(doc)) {
        const k = a(c, 'ClaveProdServ') ?? '';
        if (!/^[0-9]{8}$/.test(k) || k === '00000000' || (ctx.clavesProdServ && !ctx.clavesProdServ.has(k)))
          report(at(c, 'ClaveProdServ'));
      }
    },
  },
  {
    code: 'CFDI40165',
    node: 'Concepto/@ClaveUnidad',
    es: 'El campo ClaveUnidad no contiene un valor del catálogo c_ClaveUnidad.',
    en: 'ClaveUnidad is not a c_ClaveUnidad value.',
    status: 'enforced',
    check: (doc, report) => {
      for (const c of conceptos(doc)) if (!C_CLAVE_UNIDAD.has(a(c, 'ClaveUnidad') ?? '')) report(at(c, 'ClaveUnidad'));
    },
  },
  {
    code: 'CFDI40166',
    node: 'Concepto/@ValorUnitario',
    es: 'El valor del campo ValorUnitario debe ser mayor que cero (0) cuando el tipo de comprobante es Ingreso, Egreso o Nómina.',
    en: 'ValorUnitario must be greater than 0 on an Ingreso, an Egreso or a Nómina (a free line is no concepto).',
    status: 'enforced',
    check: (doc, report) => {
      if (!['I', 'E', 'N'].includes(tipoOf(doc))) return;
      for (const c of conceptos(doc))
        if (!(num(c, 'ValorUnitario')?.isGreaterThan(0) ?? false)) report(at(c, 'ValorUnitario'));
    },
  },
  {
    code: 'CFDI40167',
    node: 'Concepto/@Importe',
    es: 'El valor del campo Importe no se encuentra entre el límite inferior y superior permitido (Cantidad por ValorUnitario).',
    en: 'Importe is outside the limits of Cantidad × ValorUnitario Anexo 20 allows.',
    status: 'construction',
    check: (doc, report) => {
      for (const c of conceptos(doc)) {
        const cantidad = a(c, 'Cantidad');
        const vu = a(c, 'ValorUnitario');
        const importe = num(c, 'Importe');
        if (cantidad === undefined || vu === undefined || !importe) continue;
        const { min, max } = productLimits(cantidad, vu, decimalsIn(a(c, 'Importe')));
        if (!within(importe, min, max)) report(at(c, 'Importe'), `limits ${min.toFixed()}…${max.toFixed()}`);
      }
    },
  },
  {
    code: 'CFDI40169',
    node: 'Concepto/@Descuento',
    es: 'El valor del campo Descuento es mayor que el campo Importe.',
    en: 'A concepto’s Descuento exceeds its Importe.',
    status: 'enforced',
    check: (doc, report) => {
      for (const c of conceptos(doc)) {
        const d = num(c, 'Descuento');
        if (d && d.isGreaterThan(num(c, 'Importe') ?? ZERO)) report(at(c, 'Descuento'));
      }
    },
  },
  {
    code: 'CFDI40170',
    node: 'Concepto/@ObjetoImp',
    es: 'El campo ObjetoImp no contiene un valor del catálogo c_ObjetoImp.',
    en: 'ObjetoImp is not a c_ObjetoImp value; Timbra issues 01–04 (05–08 need IEPS and IVA cases it does not compute).',
    status: 'enforced',
    check: (doc, report) => {
      for (const c of conceptos(doc)) {
        const o = a(c, 'ObjetoImp');
        if (!has(C_OBJETO_IMP, o) || !['01', '02', '03', '04'].includes(o ?? '')) report(at(c, 'ObjetoImp'));
      }
    },
  },
  {
    code: 'CFDI40171',
    node: 'Concepto/cfdi:Impuestos',
    es: 'Si el campo ObjetoImp es 02, el nodo Impuestos del concepto debe existir.',
    en: 'With ObjetoImp 02 the concepto must break its taxes down (cfdi:Impuestos).',
    status: 'enforced',
    check: (doc, report) => {
      for (const c of conceptos(doc))
        if (a(c, 'ObjetoImp') === '02' && !child(c, 'Impuestos')) report(`${c.path}/cfdi:Impuestos`);
    },
  },
  {
    code: 'CFDI40172',
    node: 'Concepto/cfdi:Impuestos',
    es: 'Si el campo ObjetoImp es 01, 03 o 04, el nodo Impuestos del concepto no debe existir.',
    en: 'With ObjetoImp 01, 03 or 04 the concepto must not carry taxes.',
    status: 'enforced',
    check: (doc, report) => {
      for (const c of conceptos(doc))
        if (['01', '03', '04'].includes(a(c, 'ObjetoImp') ?? '') && child(c, 'Impuestos'))
          report(`${c.path}/cfdi:Impuestos`);
    },
  },
  {
    code: 'CFDI40174',
    node: 'Concepto/Traslado/@Base',
    es: 'El valor del campo Base del traslado debe ser mayor que cero.',
    en: 'A traslado’s Base must be greater than 0.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Traslado')) if (!num(t, 'Base')?.isGreaterThan(0)) report(at(t, 'Base'));
    },
  },
  {
    code: 'CFDI40175',
    node: 'Concepto/Traslado/@Impuesto',
    es: 'El campo Impuesto del traslado no contiene un valor del catálogo c_Impuesto que aplique a traslados.',
    en: 'A traslado’s Impuesto is not a c_Impuesto that can be transferred (IVA, IEPS).',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Traslado'))
        if (!C_IMPUESTO[a(t, 'Impuesto') ?? '']?.traslado) report(at(t, 'Impuesto'));
    },
  },
  {
    code: 'CFDI40176',
    node: 'Concepto/Traslado/@TipoFactor',
    es: 'El campo TipoFactor no contiene un valor del catálogo c_TipoFactor.',
    en: 'A traslado’s TipoFactor is not a c_TipoFactor value; only IVA may be Exento.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Traslado')) {
        const f = a(t, 'TipoFactor') ?? '';
        if (!C_TIPO_FACTOR.has(f) || (f === 'Exento' && a(t, 'Impuesto') !== '002')) report(at(t, 'TipoFactor'));
      }
    },
  },
  {
    code: 'CFDI40177',
    node: 'Concepto/Traslado',
    es: 'Si el valor registrado en el campo TipoFactor es Exento no se deben registrar los campos TasaOCuota ni Importe.',
    en: 'An Exento traslado has no TasaOCuota nor Importe.',
    status: 'construction',
    check: (doc, report) => rateAndAmount(doc, true, report),
  },
  {
    code: 'CFDI40178',
    node: 'Concepto/Traslado',
    es: 'Si el valor registrado en el campo TipoFactor es Tasa o Cuota, se deben registrar los campos TasaOCuota e Importe.',
    en: 'A Tasa or Cuota traslado has both TasaOCuota and Importe.',
    status: 'construction',
    check: (doc, report) => rateAndAmount(doc, false, report),
  },
  {
    code: 'CFDI40179',
    node: 'Concepto/Traslado/@TasaOCuota',
    es: 'El valor del campo TasaOCuota del traslado no contiene un valor del catálogo c_TasaOCuota.',
    en: 'A traslado’s TasaOCuota is not a c_TasaOCuota value for its Impuesto and TipoFactor.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Traslado')) {
        const rate = a(t, 'TasaOCuota');
        if (
          rate !== undefined &&
          !tasaOCuotaAllowed(a(t, 'Impuesto') ?? '', a(t, 'TipoFactor') ?? '', rate, 'traslado')
        )
          report(at(t, 'TasaOCuota'));
      }
    },
  },
  {
    code: 'CFDI40180',
    node: 'Concepto/Traslado/@Importe',
    es: 'El valor del campo Importe del traslado no se encuentra entre el límite inferior y superior permitido (Base por TasaOCuota).',
    en: 'A traslado’s Importe is outside the limits of Base × TasaOCuota Anexo 20 allows.',
    status: 'construction',
    check: (doc, report) => checkTaxImportes(allTaxes(doc, 'Traslado'), report),
  },
  {
    code: 'CFDI40181',
    node: 'Concepto/Retencion/@Base',
    es: 'El valor del campo Base de la retención debe ser mayor que cero.',
    en: 'A retención’s Base must be greater than 0.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Retencion')) if (!num(t, 'Base')?.isGreaterThan(0)) report(at(t, 'Base'));
    },
  },
  {
    code: 'CFDI40182',
    node: 'Concepto/Retencion/@Impuesto',
    es: 'El campo Impuesto de la retención no contiene un valor del catálogo c_Impuesto que aplique a retenciones.',
    en: 'A retención’s Impuesto is not a c_Impuesto that can be withheld.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Retencion'))
        if (!C_IMPUESTO[a(t, 'Impuesto') ?? '']?.retencion) report(at(t, 'Impuesto'));
    },
  },
  {
    code: 'CFDI40183',
    node: 'Concepto/Retencion/@TipoFactor',
    es: 'El campo TipoFactor de la retención no contiene un valor del catálogo c_TipoFactor.',
    en: 'A retención’s TipoFactor is not a c_TipoFactor value.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Retencion'))
        if (!C_TIPO_FACTOR.has(a(t, 'TipoFactor') ?? '')) report(at(t, 'TipoFactor'));
    },
  },
  {
    code: 'CFDI40184',
    node: 'Concepto/Retencion/@TipoFactor',
    es: 'El valor registrado en el campo TipoFactor que corresponde a Retención debe ser distinto de Exento.',
    en: 'A retención’s TipoFactor is never Exento.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Retencion')) if (a(t, 'TipoFactor') === 'Exento') report(at(t, 'TipoFactor'));
    },
  },
  {
    code: 'CFDI40185',
    node: 'Concepto/Retencion/@TasaOCuota',
    es: 'El valor del campo TasaOCuota de la retención no contiene un valor del catálogo c_TasaOCuota.',
    en: 'A retención’s TasaOCuota is not a c_TasaOCuota value (or range) for its Impuesto and TipoFactor.',
    status: 'enforced',
    check: (doc, report) => {
      for (const t of allTaxes(doc, 'Retencion')) {
        const rate = a(t, 'TasaOCuota') ?? '';
        if (!tasaOCuotaAllowed(a(t, 'Impuesto') ?? '', a(t, 'TipoFactor') ?? '', rate, 'retencion'))
          report(at(t, 'TasaOCuota'));
      }
    },
  },
  {
    code: 'CFDI40186',
    node: 'Concepto/Retencion/@Importe',
    es: 'El valor del campo Importe de la retención no se encuentra entre el límite inferior y superior permitido (Base por TasaOCuota).',
    en: 'A retención’s Importe is outside the limits of Base × TasaOCuota Anexo 20 allows.',
    status: 'construction',
    check: (doc, report) => checkTaxImportes(allTaxes(doc, 'Retencion'), report),
  },
];
