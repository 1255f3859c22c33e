/**
 * The CFDI 4.0 rules (Anexo 20, matriz de errores CFDI40xxx) that apply to the documents Timbra issues:
 * Ingreso, Egreso and Pago (Traslado and Nómina are not issued). Each is one named rule; the Pagos 2.0
 * complement's own rules are in pagos20.ts.
 */
import { RFC_EXTRANJERO, RFC_PUBLICO_GENERAL, rfcKind } from '../validate/rfc.ts';
import {
  C_CLAVE_UNIDAD,
  C_EXPORTACION,
  C_FORMA_PAGO,
  C_IMPUESTO,
  C_MESES,
  C_METODO_PAGO,
  C_MONEDA,
  C_OBJETO_IMP,
  C_PAIS,
  C_PERIODICIDAD,
  C_REGIMEN_FISCAL,
  C_TASA_O_CUOTA,
  C_TIPO_DE_COMPROBANTE,
  C_TIPO_FACTOR,
  C_TIPO_RELACION,
  C_USO_CFDI,
} from '../validate/sat-catalogs.ts';
import { usoCfdiAllowed } from '../validate/uso-cfdi.ts';
import { normalizeSpace } from '../validate/text.ts';
import { Dec, ZERO } from '../build/money.ts';
import {
  a,
  allTaxes,
  at,
  checkGroupSums,
  child,
  children,
  comprobanteImpuestos,
  conceptos,
  decimalsIn,
  emisor,
  monedaDecimals,
  num,
  productLimits,
  receptor,
  root,
  taxLimits,
  tipoOf,
  within,
  type Located,
} from './nodes.ts';
import type { Report, RuleContext, SatRule } from './rule.ts';
import type { XmlElement } from '../xml/xml-node.ts';

/** Name the SAT requires on a CFDI to público en general (RFC XAXX010101000). */
export const NOMBRE_PUBLICO_GENERAL = 'PUBLICO EN GENERAL';

const has = (catalog: object, key: string | undefined) => key !== undefined && Object.hasOwn(catalog, key);
const R = root;

/** Whether a c_TasaOCuota row allows this rate for the tax, factor and kind (traslado/retención). */
export function tasaOCuotaAllowed(
  impuesto: string,
  factor: string,
  rate: string,
  kind: 'traslado' | 'retencion',
): boolean {
  // The answer depends on these four texts only, and a merchant's documents repeat a few rates.
  const key = `${impuesto}|${factor}|${rate}|${kind}`;
  let allowed = TASA_ALLOWED.get(key);
  if (allowed === undefined) {
    allowed = /^[0-9]+(\.[0-9]+)?$/.test(rate) && tasaOCuotaRow(impuesto, factor, rate, kind);
    if (TASA_ALLOWED.size >= 1000) TASA_ALLOWED.clear();
    TASA_ALLOWED.set(key, allowed);
  }
  return allowed;
}
const TASA_ALLOWED = new Map<string, boolean>();

/** Whether some c_TasaOCuota row allows `rate` (a number's text: its decimals count for fixed rates). */
function tasaOCuotaRow(impuesto: string, factor: string, rate: string, kind: 'traslado' | 'retencion') {
  const value = new Dec(rate);
  return C_TASA_O_CUOTA.some(
    (row) =>
      row.impuesto === impuesto &&
      row.factor === factor &&
      row[kind] &&
      (row.value !== undefined
        ? value.isEqualTo(row.value) && decimalsIn(rate) === 6
        : within(value, new Dec(row.min ?? 0), new Dec(row.max ?? 0))),
  );
}

function personaOf(rfc: string | undefined): 'fisica' | 'moral' | 'generico' | null {
  return rfc === undefined ? null : rfcKind(rfc);
}

const isGeneric = (rfc: string | undefined) => rfc === RFC_PUBLICO_GENERAL || rfc === RFC_EXTRANJERO;

/** Reports `name` on a receptor that is not the foreign generic RFC (CFDI40151, CFDI40154). */
function foreignOnly(doc: XmlElement, name: string, report: Report): void {
  const r = receptor(doc);
  if (r && a(r, name) !== undefined && a(r, 'Rfc') !== RFC_EXTRANJERO) report(at(r, name));
}

/** Σ of an attribute over nodes (absent counts 0). */
function total(nodes: readonly Located[], name: string): Dec {
  let s = ZERO;
  for (const n of nodes) s = s.plus(num(n, name) ?? ZERO);
  return s;
}

export const CFDI40_RULES: readonly SatRule[] = [
  {
    code: 'CFDI40101',
    node: 'Comprobante/@Fecha',
    es: 'El campo Fecha no cumple con el patrón requerido.',
    en: 'Fecha does not have the required pattern (YYYY-MM-DDThh:mm:ss).',
    status: 'construction',
    check: (doc, report) => {
      const f = a(R(doc), 'Fecha');
      if (f === undefined || !/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d$/.test(f))
        report(at(R(doc), 'Fecha'));
    },
  },
  {
    code: 'CFDI40103',
    node: 'Comprobante/@FormaPago',
    es: 'Si existe el tipo de comprobante T, N o P, el campo FormaPago no debe existir.',
    en: 'FormaPago must not be present on a Traslado, Nómina or Pago (a Pago’s form goes in the complement).',
    status: 'construction',
    check: (doc, report) => {
      if (['T', 'N', 'P'].includes(tipoOf(doc)) && a(R(doc), 'FormaPago') !== undefined)
        report(at(R(doc), 'FormaPago'));
    },
  },
  {
    code: 'CFDI40104',
    node: 'Comprobante/@FormaPago',
    es: 'El campo FormaPago no contiene un valor del catálogo c_FormaPago.',
    en: 'FormaPago is required on an Ingreso or Egreso and must be a c_FormaPago value.',
    status: 'enforced',
    applies: ['I', 'E'],
    check: (doc, report) => {
      if (!has(C_FORMA_PAGO, a(R(doc), 'FormaPago'))) report(at(R(doc), 'FormaPago'));
    },
  },
  {
    code: 'CFDI40105',
    node: 'Comprobante/@FormaPago',
    es: 'Si el campo MetodoPago es PPD, el campo FormaPago debe contener el valor 99.',
    en: 'With MetodoPago PPD, FormaPago must be 99 (por definir).',
    status: 'enforced',
    applies: ['I', 'E'],
    check: (doc, report) => {
      if (a(R(doc), 'MetodoPago') === 'PPD' && a(R(doc), 'FormaPago') !== '99') report(at(R(doc), 'FormaPago'));
    },
  },
  {
    code: 'CFDI40107',
    node: 'Comprobante/@SubTotal',
    es: 'El valor del campo SubTotal excede la cantidad de decimales que soporta la moneda.',
    en: 'SubTotal has more decimals than the currency allows (c_Moneda).',
    status: 'construction',
    check: (doc, report) => {
      if (decimalsIn(a(R(doc), 'SubTotal')) > monedaDecimals(a(R(doc), 'Moneda'))) report(at(R(doc), 'SubTotal'));
    },
  },
  {
    code: 'CFDI40108',
    node: 'Comprobante/@SubTotal',
    es: 'El TipoDeComprobante es I, E o N, el importe registrado en el campo SubTotal no es igual al redondeo de la suma de los importes de los conceptos registrados.',
    en: 'SubTotal is not the sum of the conceptos’ Importe rounded to the currency’s decimals.',
    status: 'construction',
    applies: ['I', 'E'],
    check: (doc, report) => {
      const expected = total(conceptos(doc), 'Importe').decimalPlaces(monedaDecimals(a(R(doc), 'Moneda')));
      if (!num(R(doc), 'SubTotal')?.isEqualTo(expected))
        report(at(R(doc), 'SubTotal'), `expected ${expected.toFixed()}`);
    },
  },
  {
    code: 'CFDI40109',
    node: 'Comprobante/@SubTotal',
    es: 'El TipoDeComprobante es T o P y el importe no es igual a 0, o cero con decimales.',
    en: 'SubTotal must be 0 on a Pago.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      if (!num(R(doc), 'SubTotal')?.isZero()) report(at(R(doc), 'SubTotal'));
    },
  },
  {
    code: 'CFDI40110',
    node: 'Comprobante/@Descuento',
    es: 'El valor registrado en el campo Descuento no es menor o igual que el campo SubTotal.',
    en: 'Descuento must not exceed SubTotal.',
    status: 'enforced',
    check: (doc, report) => {
      const d = num(R(doc), 'Descuento');
      const s = num(R(doc), 'SubTotal');
      if (d && s && d.isGreaterThan(s)) report(at(R(doc), 'Descuento'));
    },
  },
  {
    code: 'CFDI40111',
    node: 'Comprobante/@Descuento',
    es: 'El TipoDeComprobante es I, E o N, y algún concepto incluye el campo descuento; el campo Descuento debe existir y ser igual al redondeo de la suma de los descuentos de los conceptos (no debe existir en T o P).',
    en: 'Descuento must be the rounded sum of the conceptos’ Descuento when any has one, and absent otherwise and on a Pago.',
    status: 'construction',
    check: (doc, report) => {
      const withDescuento = conceptos(doc).filter((c) => a(c, 'Descuento') !== undefined);
      const d = num(R(doc), 'Descuento');
      if (tipoOf(doc) === 'P' || withDescuento.length === 0) {
        if (a(R(doc), 'Descuento') !== undefined) report(at(R(doc), 'Descuento'), 'must be absent');
        return;
      }
      const expected = total(withDescuento, 'Descuento').decimalPlaces(monedaDecimals(a(R(doc), 'Moneda')));
      if (!d?.isEqualTo(expected)) report(at(R(doc), 'Descuento'), `expected ${expected.toFixed()}`);
    },
  },
  {
    code: 'CFDI40112',
    node: 'Comprobante/@Descuento',
    es: 'El valor del campo Descuento excede la cantidad de decimales que soporta la moneda.',
    en: 'Descuento has more decimals than the currency allows.',
    status: 'construction',
    check: (doc, report) => {
      const d = a(R(doc), 'Descuento');
      if (d !== undefined && decimalsIn(d) > monedaDecimals(a(R(doc), 'Moneda'))) report(at(R(doc), 'Descuento'));
    },
  },
  {
    code: 'CFDI40113',
    node: 'Comprobante/@Moneda',
    es: 'El campo Moneda no contiene un valor del catálogo c_Moneda.',
    en: 'Moneda is not a c_Moneda value (XXX only on a Pago).',
    status: 'enforced',
    check: (doc, report) => {
      const m = a(R(doc), 'Moneda');
      const tipo = tipoOf(doc);
      if (!has(C_MONEDA, m) || (tipo === 'P') !== (m === 'XXX')) report(at(R(doc), 'Moneda'));
    },
  },
  {
    code: 'CFDI40114',
    node: 'Comprobante/@TipoCambio',
    es: 'Si el campo Moneda es MXN, el campo TipoCambio puede omitirse, pero si se incluye debe tener el valor 1.',
    en: 'With Moneda MXN, TipoCambio must be absent or 1.',
    status: 'enforced',
    check: (doc, report) => {
      const tc = a(R(doc), 'TipoCambio');
      if (a(R(doc), 'Moneda') === 'MXN' && tc !== undefined && !new Dec(tc).isEqualTo(1))
        report(at(R(doc), 'TipoCambio'));
    },
  },
  {
    code: 'CFDI40115',
    node: 'Comprobante/@TipoCambio',
    es: 'El campo TipoCambio se debe registrar cuando el campo Moneda tiene un valor distinto de MXN y XXX.',
    en: 'TipoCambio is required when Moneda is neither MXN nor XXX.',
    status: 'enforced',
    check: (doc, report) => {
      const m = a(R(doc), 'Moneda');
      if (m !== 'MXN' && m !== 'XXX' && a(R(doc), 'TipoCambio') === undefined) report(at(R(doc), 'TipoCambio'));
    },
  },
  {
    code: 'CFDI40116',
    node: 'Comprobante/@TipoCambio',
    es: 'El campo TipoCambio no se debe registrar cuando el campo Moneda tiene el valor XXX.',
    en: 'TipoCambio must be absent when Moneda is XXX (a Pago).',
    status: 'enforced',
    check: (doc, report) => {
      if (a(R(doc), 'Moneda') === 'XXX' && a(R(doc), 'TipoCambio') !== undefined) report(at(R(doc), 'TipoCambio'));
    },
  },
  {
    code: 'CFDI40117',
    node: 'Comprobante/@TipoCambio',
    es: 'El campo TipoCambio no cumple con el patrón requerido.',
    en: 'TipoCambio must be a positive decimal with at most 6 decimals.',
    status: 'enforced',
    check: (doc, report) => {
      const tc = a(R(doc), 'TipoCambio');
      if (tc !== undefined && (!/^[0-9]{1,18}(\.[0-9]{1,6})?$/.test(tc) || new Dec(tc).isZero()))
        report(at(R(doc), 'TipoCambio'));
    },
  },
  {
    code: 'CFDI40118',
    node: 'Comprobante/@TipoCambio',
    es: 'Cuando el valor del campo TipoCambio se encuentre fuera de los límites establecidos, debe existir el campo Confirmacion.',
    en: 'TipoCambio outside the variation c_Moneda allows around the day’s rate needs a Confirmacion (needs the DOF rate of the day).',
    status: 'needs-sat-data',
    check: () => {
      // Needs the exchange rate the DOF published for the day: not available offline. Timbra never
      // writes a Confirmacion, so an out-of-range TipoCambio is a PAC rejection (CFDI40118).
    },
  },
  {
    code: 'CFDI40119',
    node: 'Comprobante/@Total',
    es: 'El campo Total no corresponde con la suma del subtotal, menos los descuentos aplicables, más las contribuciones recibidas (impuestos trasladados) menos los impuestos retenidos.',
    en: 'Total must be SubTotal − Descuento + TotalImpuestosTrasladados − TotalImpuestosRetenidos (0 on a Pago).',
    status: 'construction',
    check: (doc, report) => {
      const imp = comprobanteImpuestos(doc);
      const expected = (num(R(doc), 'SubTotal') ?? ZERO)
        .minus(num(R(doc), 'Descuento') ?? ZERO)
        .plus(num(imp, 'TotalImpuestosTrasladados') ?? ZERO)
        .minus(num(imp, 'TotalImpuestosRetenidos') ?? ZERO);
      if (!num(R(doc), 'Total')?.isEqualTo(expected)) report(at(R(doc), 'Total'), `expected ${expected.toFixed()}`);
    },
  },
  {
    code: 'CFDI40120',
    node: 'Comprobante/@Total',
    es: 'Cuando el valor del campo Total se encuentre fuera de los límites establecidos en c_TipoDeComprobante, debe existir el campo Confirmacion.',
    en: 'Total exceeds the maximum c_TipoDeComprobante allows without a Confirmacion (Timbra issues none).',
    status: 'enforced',
    check: (doc, report) => {
      const max = C_TIPO_DE_COMPROBANTE[tipoOf(doc)]?.maxTotal;
      const t = num(R(doc), 'Total');
      if (max !== undefined && t?.isGreaterThan(max)) report(at(R(doc), 'Total'));
    },
  },
  {
    code: 'CFDI40121',
    node: 'Comprobante/@TipoDeComprobante',
    es: 'El campo TipoDeComprobante no contiene un valor del catálogo c_TipoDeComprobante.',
    en: 'TipoDeComprobante is not a c_TipoDeComprobante value Timbra issues (I, E, P).',
    status: 'construction',
    check: (doc, report) => {
      if (!['I', 'E', 'P'].includes(tipoOf(doc)) || !has(C_TIPO_DE_COMPROBANTE, tipoOf(doc)))
        report(at(R(doc), 'TipoDeComprobante'));
    },
  },
  {
    code: 'CFDI40122',
    node: 'Comprobante/@Exportacion',
    es: 'El campo Exportacion contiene el valor "02", el CFDI debe contener el complemento para Comercio Exterior.',
    en: 'Exportacion 02 needs the Comercio Exterior complement, which Timbra does not issue.',
    status: 'enforced',
    check: (doc, report) => {
      if (a(R(doc), 'Exportacion') === '02') report(at(R(doc), 'Exportacion'));
    },
  },
  {
    code: 'CFDI40123',
    node: 'Comprobante/@Exportacion',
    es: 'El campo Exportacion no contiene un valor del catálogo c_Exportacion.',
    en: 'Exportacion is not a c_Exportacion value.',
    status: 'enforced',
    check: (doc, report) => {
      if (!has(C_EXPORTACION, a(R(doc), 'Exportacion'))) report(at(R(doc), 'Exportacion'));
    },
  },
  {
    code: 'CFDI40124',
    node: 'Comprobante/@MetodoPago',
    es: 'El campo MetodoPago no contiene un valor del catálogo c_MetodoPago.',
    en: 'MetodoPago is required on an Ingreso or Egreso and must be PUE or PPD.',
    status: 'enforced',
    applies: ['I', 'E'],
    check: (doc, report) => {
      if (!has(C_METODO_PAGO, a(R(doc), 'MetodoPago'))) report(at(R(doc), 'MetodoPago'));
    },
  },
  {
    code: 'CFDI40125',
    node: 'Comprobante/@MetodoPago',
    es: 'Si el tipo de comprobante es T o P, el campo MetodoPago no debe existir.',
    en: 'MetodoPago must not be present on a Pago.',
    status: 'construction',
    applies: ['P'],
    check: (doc, report) => {
      if (a(R(doc), 'MetodoPago') !== undefined) report(at(R(doc), 'MetodoPago'));
    },
  },
  {
    code: 'CFDI40126',
    node: 'Comprobante/@LugarExpedicion',
    es: 'El campo LugarExpedicion no contiene un valor del catálogo c_CodigoPostal.',
    en: 'LugarExpedicion is not a c_CodigoPostal value (checked by shape unless the operator supplied the catalogue).',
    status: 'needs-sat-data',
    check: (doc, report, ctx) => {
      const cp = a(R(doc), 'LugarExpedicion');
      if (cp === undefined || !/^[0-9]{5}$/.test(cp) || (ctx.codigosPostales && !ctx.codigosPostales.has(cp)))
        report(at(R(doc), 'LugarExpedicion'));
    },
  },
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
  {
    // The matrix has no code of its own for an RFC of no shape; a PAC answers that it is not listed.
    code: 'CFDI40143',
    node: 'Receptor/@Rfc',
    es: 'Este RFC del receptor no existe en la lista de RFC inscritos no cancelados del SAT.',
    en: 'The receptor’s Rfc has neither the shape of a persona física’s nor of a moral’s RFC.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && personaOf(a(r, 'Rfc')) === null) report(at(r, 'Rfc'));
    },
  },
  {
    code: 'CFDI40143',
    node: 'Receptor/@Rfc',
    es: 'Este RFC del receptor no existe en la lista de RFC inscritos no cancelados del SAT.',
    en: 'The receptor’s RFC is not in the SAT’s list of registered, not cancelled taxpayers (L_RFC).',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      if (!ctx.taxpayer || !r || isGeneric(rfc)) return;
      if (ctx.taxpayer(rfc ?? '')?.status !== 'active') report(at(r, 'Rfc'));
    },
  },
  {
    code: 'CFDI40145',
    node: 'Receptor/@Nombre',
    es: 'El campo Nombre del receptor debe pertenecer al nombre asociado al RFC registrado en el campo Rfc del receptor.',
    en: 'The receptor’s Nombre is not the name registered for its RFC.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && a(r, 'Nombre') !== t.name) report(at(r, 'Nombre'), `registered: ${t.name}`);
    },
  },
  {
    code: 'CFDI40146',
    node: 'Receptor/@Nombre',
    es: 'El campo RFC del receptor debe contener el valor "XAXX010101000" (Nombre PUBLICO EN GENERAL).',
    en: 'PUBLICO EN GENERAL is only the name of RFC XAXX010101000.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (
        r &&
        a(r, 'Rfc') !== RFC_PUBLICO_GENERAL &&
        normalizeSpace(a(r, 'Nombre') ?? '').toUpperCase() === NOMBRE_PUBLICO_GENERAL
      )
        report(at(r, 'Nombre'));
    },
  },
  {
    code: 'CFDI40147',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'El campo DomicilioFiscalReceptor del receptor, debe encontrarse en la lista de RFC inscritos no cancelados en el SAT.',
    en: 'The receptor’s DomicilioFiscalReceptor is not the postal code registered for its RFC.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && a(r, 'DomicilioFiscalReceptor') !== t.postalCode)
        report(at(r, 'DomicilioFiscalReceptor'), `registered: ${t.postalCode}`);
    },
  },
  {
    // A postal code outside c_CodigoPostal is no taxpayer's: PACs answer CFDI40147 for it.
    code: 'CFDI40147',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'El campo DomicilioFiscalReceptor del receptor, debe encontrarse en la lista de RFC inscritos no cancelados en el SAT.',
    en: 'DomicilioFiscalReceptor is not a c_CodigoPostal value (checked by shape unless the operator supplied the catalogue).',
    status: 'needs-sat-data',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const cp = a(r, 'DomicilioFiscalReceptor');
      if (r && (cp === undefined || !/^[0-9]{5}$/.test(cp) || (ctx.codigosPostales && !ctx.codigosPostales.has(cp))))
        report(at(r, 'DomicilioFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40149',
    node: 'Receptor/@DomicilioFiscalReceptor',
    es: 'Si el valor del campo Rfc del receptor es XAXX010101000 o XEXX010101000, DomicilioFiscalReceptor debe ser igual al valor del campo LugarExpedicion.',
    en: 'With a generic RFC (XAXX010101000, XEXX010101000), DomicilioFiscalReceptor must equal LugarExpedicion.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'DomicilioFiscalReceptor') !== a(R(doc), 'LugarExpedicion'))
        report(at(r, 'DomicilioFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40150',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'El campo ResidenciaFiscal, no contiene un valor del catálogo c_Pais.',
    en: 'ResidenciaFiscal is not a c_Pais value.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const pais = a(r, 'ResidenciaFiscal');
      if (r && pais !== undefined && !C_PAIS.has(pais)) report(at(r, 'ResidenciaFiscal'));
    },
  },
  {
    code: 'CFDI40151',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'Si el RFC del receptor es de un RFC registrado en el SAT o un RFC genérico nacional, el campo ResidenciaFiscal no debe existir.',
    en: 'ResidenciaFiscal applies only to a foreign receptor (XEXX010101000).',
    status: 'enforced',
    check: (doc, report) => foreignOnly(doc, 'ResidenciaFiscal', report),
  },
  {
    code: 'CFDI40152',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'El valor del campo ResidenciaFiscal no puede ser MEX.',
    en: 'ResidenciaFiscal never names MEX.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && a(r, 'ResidenciaFiscal') === 'MEX') report(at(r, 'ResidenciaFiscal'));
    },
  },
  {
    code: 'CFDI40153',
    node: 'Receptor/@ResidenciaFiscal',
    es: 'Se debe registrar un valor del catálogo c_Pais en el campo ResidenciaFiscal cuando en el campo NumRegIdTrib se registre información.',
    en: 'A receptor with NumRegIdTrib must say its ResidenciaFiscal.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && a(r, 'NumRegIdTrib') !== undefined && a(r, 'ResidenciaFiscal') === undefined)
        report(at(r, 'NumRegIdTrib'));
    },
  },
  {
    code: 'CFDI40154',
    node: 'Receptor/@NumRegIdTrib',
    es: 'Si el RFC del receptor es de un RFC registrado en el SAT o un RFC genérico nacional, el campo NumRegIdTrib no debe existir.',
    en: 'NumRegIdTrib applies only to a foreign receptor (XEXX010101000).',
    status: 'enforced',
    check: (doc, report) => foreignOnly(doc, 'NumRegIdTrib', report),
  },
  {
    code: 'CFDI40157',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'El campo RegimenFiscalReceptor no contiene un valor del catálogo c_RegimenFiscal.',
    en: 'RegimenFiscalReceptor is not a c_RegimenFiscal value.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && !has(C_REGIMEN_FISCAL, a(r, 'RegimenFiscalReceptor'))) report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40158',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'La clave del campo RegimenFiscalReceptor debe corresponder con el tipo de persona (física o moral).',
    en: 'RegimenFiscalReceptor does not apply to the receptor’s kind of persona (física/moral).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const kind = personaOf(a(r, 'Rfc'));
      const regimen = C_REGIMEN_FISCAL[a(r, 'RegimenFiscalReceptor') ?? ''];
      if (r && regimen && (kind === 'fisica' || kind === 'moral') && !regimen[kind])
        report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40159',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'La clave del campo RegimenFiscalR debe corresponder con el RFC del receptor (un régimen en el que está inscrito).',
    en: 'RegimenFiscalReceptor is not a régimen the receptor is registered in.',
    status: 'sandbox',
    check: (doc, report, ctx) => {
      const r = receptor(doc);
      const rfc = a(r, 'Rfc');
      const t = isGeneric(rfc) ? undefined : ctx.taxpayer?.(rfc ?? '');
      if (r && t && !t.regimenes.includes(a(r, 'RegimenFiscalReceptor') ?? ''))
        report(at(r, 'RegimenFiscalReceptor'), `registered: ${t.regimenes.join(', ')}`);
    },
  },
  {
    code: 'CFDI40159',
    node: 'Receptor/@RegimenFiscalReceptor',
    es: 'Si el atributo Rfc del Receptor contiene el valor “XAXX010101000” o el valor “XEXX010101000”, se debe registrar la clave “616” en RegimenFiscalR.',
    en: 'With a generic RFC, RegimenFiscalReceptor must be 616 (sin obligaciones fiscales).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'RegimenFiscalReceptor') !== '616')
        report(at(r, 'RegimenFiscalReceptor'));
    },
  },
  {
    code: 'CFDI40161',
    node: 'Receptor/@UsoCFDI',
    es: 'La clave del campo UsoCFDI debe corresponder con el tipo de persona (física o moral) y el régimen correspondiente conforme al catálogo c_UsoCFDI.',
    en: 'UsoCFDI does not apply to the receptor’s kind of persona and RegimenFiscalReceptor (c_UsoCFDI).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const kind = personaOf(a(r, 'Rfc'));
      const uso = a(r, 'UsoCFDI') ?? '';
      if (!r || !(kind === 'fisica' || kind === 'moral') || !has(C_USO_CFDI, uso)) return;
      if (!usoCfdiAllowed(uso, a(r, 'RegimenFiscalReceptor') ?? '', kind)) report(at(r, 'UsoCFDI'));
    },
  },
  {
    // c_UsoCFDI allows only S01 and CP01 to régimen 616, the generic RFCs' one.
    code: 'CFDI40161',
    node: 'Receptor/@UsoCFDI',
    es: 'La clave del campo UsoCFDI debe corresponder con el tipo de persona (física o moral) y el régimen correspondiente conforme al catálogo c_UsoCFDI.',
    en: 'With a generic RFC, UsoCFDI must be S01 (CP01 on a Pago).',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      if (r && isGeneric(a(r, 'Rfc')) && a(r, 'UsoCFDI') !== (tipoOf(doc) === 'P' ? 'CP01' : 'S01'))
        report(at(r, 'UsoCFDI'));
    },
  },
  {
    code: 'CFDI40160',
    node: 'Receptor/@UsoCFDI',
    es: 'El campo UsoCFDI, no contiene un valor del catálogo c_UsoCFDI (CP01 solo en un comprobante de pago).',
    en: 'UsoCFDI is not a c_UsoCFDI value; CP01 is for a Pago and a Pago must use CP01.',
    status: 'enforced',
    check: (doc, report) => {
      const r = receptor(doc);
      const uso = a(r, 'UsoCFDI');
      if (r && (!has(C_USO_CFDI, uso) || (tipoOf(doc) === 'P') !== (uso === 'CP01'))) report(at(r, 'UsoCFDI'));
    },
  },
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

/**
 * The comprobante's Traslados against the conceptos' (CFDI40215 for Base, with the groups; CFDI40221
 * for Importe, which an Exento group does not carry).
 */
function checkTraslados(doc: XmlElement, sum: 'Base' | 'Importe', report: Report): void {
  const imp = comprobanteImpuestos(doc);
  const key = (t: Located) => `${a(t, 'Impuesto')}|${a(t, 'TipoFactor')}|${a(t, 'TasaOCuota') ?? ''}`;
  checkGroupSums(
    {
      sources: allTaxes(doc, 'Traslado'),
      written: children(imp ? child(imp, 'Traslados') : undefined, 'Traslado'),
      keys: { source: key, written: key },
      sums: { [sum]: sum },
      decimals: monedaDecimals(a(R(doc), 'Moneda')),
      missingAt: `${imp?.path ?? R(doc).path}/cfdi:Traslados`,
      applies: (t) => sum === 'Base' || a(t, 'TipoFactor') !== 'Exento',
      groups: sum === 'Base',
    },
    report,
  );
}

/** A concepto traslado's TasaOCuota and Importe: absent when Exento (CFDI40177), else present (40178). */
function rateAndAmount(doc: XmlElement, exento: boolean, report: Report): void {
  for (const t of allTaxes(doc, 'Traslado')) {
    if ((a(t, 'TipoFactor') === 'Exento') !== exento) continue;
    for (const name of ['TasaOCuota', 'Importe'])
      if ((a(t, name) !== undefined) === exento) report(at(t, name), exento ? 'must be absent' : 'missing');
  }
}

function checkTaxImportes(taxes: readonly Located[], report: (path: string, detail?: string) => void): void {
  for (const t of taxes) {
    const base = a(t, 'Base');
    const rate = a(t, 'TasaOCuota');
    const importe = num(t, 'Importe');
    if (base === undefined || rate === undefined || !importe) continue;
    const { min, max } = taxLimits(base, rate, decimalsIn(a(t, 'Importe')));
    if (!within(importe, min, max)) report(at(t, 'Importe'), `limits ${min.toFixed()}…${max.toFixed()}`);
  }
}

export type { RuleContext };
