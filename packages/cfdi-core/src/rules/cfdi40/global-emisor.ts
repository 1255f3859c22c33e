/** InformacionGlobal (a factura global), CfdiRelacionados and the Emisor (CFDI40130–40141). */
import { RFC_PUBLICO_GENERAL } from '../../validate/rfc.ts';
import { C_MESES, C_PERIODICIDAD, C_REGIMEN_FISCAL, C_TIPO_RELACION } from '../../validate/sat-catalogs.ts';
import { a, at, child, children, emisor, receptor, tipoOf } from '../nodes.ts';
import { NOMBRE_PUBLICO_GENERAL, has, R, personaOf } from './helpers.ts';
import type { SatRule } from '../rule.ts';

export const GLOBAL_EMISOR_RULES: readonly SatRule[] = [
  {
    code: 'CFDI40130',
    node: 'Comprobante/cfdi:InformacionGlobal',
    es: 'Si el RFC del receptor es XAXX010101000 y el nombre es PUBLICO EN GENERAL, el nodo InformacionGlobal debe existir; en otro caso no debe existir.',
    en: 'InformacionGlobal is required on an Ingreso to XAXX010101000 named PUBLICO EN GENERAL, and only there.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const global =
        tipoOf(doc) === 'I' && a(r, 'Rfc') === RFC_PUBLICO_GENERAL && a(r, 'Nombre') === NOMBRE_PUBLICO_GENERAL;
      const present = child(R(doc), 'InformacionGlobal') !== undefined;
      if (global !== present) report(`${R(doc).path}/cfdi:InformacionGlobal`, global ? 'missing' : 'must be absent');
    },
  },
  {
    code: 'CFDI40131',
    node: 'InformacionGlobal/@Periodicidad',
    es: 'El campo Periodicidad no contiene un valor del catálogo c_Periodicidad.',
    en: 'Periodicidad is not a c_Periodicidad value.',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      if (g && !has(C_PERIODICIDAD, a(g, 'Periodicidad'))) report(at(g, 'Periodicidad'));
    },
  },
  {
    code: 'CFDI40132',
    node: 'InformacionGlobal/@Periodicidad',
    es: 'El campo Periodicidad solo puede tener el valor 05 (bimestral) si el régimen fiscal del emisor es 621.',
    en: 'Periodicidad 05 (bimestral) applies only to an emisor in régimen 621.',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      if (g && a(g, 'Periodicidad') === '05' && a(emisor(doc), 'RegimenFiscal') !== '621')
        report(at(g, 'Periodicidad'));
    },
  },
  {
    code: 'CFDI40133',
    node: 'InformacionGlobal/@Meses',
    es: 'El campo Meses no contiene un valor del catálogo c_Meses.',
    en: 'Meses is not a c_Meses value.',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      if (g && !has(C_MESES, a(g, 'Meses'))) report(at(g, 'Meses'));
    },
  },
  {
    code: 'CFDI40135',
    node: 'InformacionGlobal/@Meses',
    es: 'El campo Meses, no contiene alguno de los valores “13”, “14”, “15”, “16”, “17” o “18” (Periodicidad 05).',
    en: 'With Periodicidad 05, Meses must be a bimester (13–18).',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      const m = Number(a(g, 'Meses'));
      if (g && a(g, 'Periodicidad') === '05' && !(m >= 13 && m <= 18)) report(at(g, 'Meses'));
    },
  },
  {
    code: 'CFDI40134',
    node: 'InformacionGlobal/@Meses',
    es: 'El campo Meses, no contiene alguno de los valores “01” a “12” (Periodicidad distinta de 05).',
    en: 'With a Periodicidad other than 05, Meses must be a month (01–12).',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      const m = Number(a(g, 'Meses'));
      if (g && a(g, 'Periodicidad') !== '05' && !(m >= 1 && m <= 12)) report(at(g, 'Meses'));
    },
  },
  {
    code: 'CFDI40136',
    node: 'InformacionGlobal/@Año',
    es: 'El campo Año debe ser igual al año en curso o al año inmediato anterior, considerando el registrado en la Fecha de emisión del comprobante.',
    en: 'Año must be the year of Fecha or the year before.',
    status: 'enforced',
    check: (doc, report) => {
      const g = child(R(doc), 'InformacionGlobal');
      if (!g) return;
      const year = Number((a(R(doc), 'Fecha') ?? '').slice(0, 4));
      const año = Number(a(g, 'Año'));
      if (año !== year && año !== year - 1) report(at(g, 'Año'));
    },
  },
  {
    code: 'CFDI40137',
    node: 'CfdiRelacionados/@TipoRelacion',
    es: 'El campo TipoRelacion no contiene un valor del catálogo c_TipoRelacion.',
    en: 'TipoRelacion is not a c_TipoRelacion value.',
    status: 'enforced',
    check: (doc, report) => {
      for (const rel of children(R(doc), 'CfdiRelacionados'))
        if (!has(C_TIPO_RELACION, a(rel, 'TipoRelacion'))) report(at(rel, 'TipoRelacion'));
    },
  },
  {
    code: 'CFDI40138',
    node: 'Emisor/@Rfc',
    es: 'El campo Rfc del emisor no se encuentra en la lista de RFC inscritos no cancelados del SAT.',
    en: 'The emisor’s RFC is not in the SAT’s list of registered, not cancelled taxpayers (L_RFC).',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const e = emisor(doc);
      if (!ctx.taxpayer || !e) return;
      if (ctx.taxpayer(a(e, 'Rfc') ?? '')?.status !== 'active') report(at(e, 'Rfc'));
    },
  },
  {
    code: 'CFDI40139',
    node: 'Emisor/@Nombre',
    es: 'El campo Nombre del emisor debe pertenecer al nombre asociado al RFC registrado en el campo Rfc del emisor.',
    en: 'The emisor’s Nombre is not the name registered for its RFC.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const e = emisor(doc);
      const t = ctx.taxpayer?.(a(e, 'Rfc') ?? '');
      if (e && t && a(e, 'Nombre') !== t.name) report(at(e, 'Nombre'), `registered: ${t.name}`);
    },
  },
  {
    code: 'CFDI40140',
    node: 'Emisor/@RegimenFiscal',
    es: 'El campo RegimenFiscal no contiene un valor del catálogo c_RegimenFiscal.',
    en: 'The emisor’s RegimenFiscal is not a c_RegimenFiscal value.',
    status: 'enforced',
    check: (doc, report) => {
      const e = emisor(doc);
      if (e && !has(C_REGIMEN_FISCAL, a(e, 'RegimenFiscal'))) report(at(e, 'RegimenFiscal'));
    },
  },
  {
    code: 'CFDI40141',
    node: 'Emisor/@RegimenFiscal',
    es: 'La clave del campo RegimenFiscal debe corresponder con el tipo de persona (física o moral).',
    en: 'The emisor’s RegimenFiscal does not apply to its kind of persona (física/moral).',
    status: 'enforced',
    check: (doc, report) => {
      const e = emisor(doc);
      const kind = personaOf(a(e, 'Rfc'));
      const regimen = C_REGIMEN_FISCAL[a(e, 'RegimenFiscal') ?? ''];
      if (e && regimen && (kind === 'fisica' || kind === 'moral') && !regimen[kind]) report(at(e, 'RegimenFiscal'));
    },
  },
];
