/** Each Pago (CRP20212–CRP20219) and each related document (CRP20236–CRP20247). */
import { C_FORMA_PAGO, C_MONEDA, C_OBJETO_IMP } from '../../validate/sat-catalogs.ts';
import { ZERO } from '../../build/money.ts';
import { a, at, child, decimalsIn, monedaDecimals, num, type Located } from '../nodes.ts';
import type { SatRule } from '../rule.ts';
import { P, pagoNodes, doctos, has, taxesDR, eachDocto, rule } from './helpers.ts';

// ---- CRP20212–CRP20219: each Pago -------------------------------------------------------------------

/** A rule over each Pago (`bad` says whether it breaks it; a string is the detail reported). */
const pagoRule = (code: string, name: string, es: string, en: string, bad: (p: Located) => boolean | string): SatRule =>
  rule(code, `Pago/@${name}`, es, en, 'enforced', (doc, report) => {
    for (const p of pagoNodes(doc)) {
      const broken = bad(p);
      if (broken) report(at(p, name), typeof broken === 'string' ? broken : undefined);
    }
  });

export const PAGO_RULES: SatRule[] = [
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

export const DOCTO_RULES: SatRule[] = [
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
