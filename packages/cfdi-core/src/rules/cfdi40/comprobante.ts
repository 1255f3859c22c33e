/** The Comprobante's own attributes (CFDI40101–40129): Fecha, FormaPago, SubTotal, Descuento, Moneda, TipoCambio, Total, TipoDeComprobante, Exportacion, MetodoPago, LugarExpedicion. */
import {
  C_EXPORTACION,
  C_FORMA_PAGO,
  C_METODO_PAGO,
  C_MONEDA,
  C_TIPO_DE_COMPROBANTE,
} from '../../validate/sat-catalogs.ts';
import { Dec, ZERO } from '../../build/money.ts';
import { a, at, comprobanteImpuestos, conceptos, decimalsIn, monedaDecimals, num, tipoOf } from '../nodes.ts';
import { has, R, total } from './helpers.ts';
import type { SatRule } from '../rule.ts';

export const COMPROBANTE_RULES: readonly SatRule[] = [
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
];
