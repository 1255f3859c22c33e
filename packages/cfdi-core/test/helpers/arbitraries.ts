import { BigNumber } from 'bignumber.js';
import fc from 'fast-check';
import { isBlank } from '../../src/validate/text.ts';
import type { InvoiceRequestInput } from '../../src/index.ts';

// Characters a hostile or merely careless caller sends: XML specials, quotes, accents and ñ, every XML
// whitespace, NBSP (not XML whitespace: must survive normalisation), astral emoji, RTL text.
const HOSTILE_CHARS = [
  'a',
  'Z',
  '0',
  '9',
  ' ',
  ' ',
  ' ',
  '\t',
  '\n',
  '\r',
  '&',
  '<',
  '>',
  '"',
  "'",
  'ñ',
  'Ñ',
  'á',
  'é',
  'í',
  'ó',
  'ú',
  'ü',
  '\u00a0',
  '€',
  '«',
  '»',
  '😀',
  'ש',
  ';',
  '/',
  '\\',
  '%',
  '#',
  ']]>',
  '&amp;',
  '<!--',
  '-->',
  '=',
];

/**
 * Text the SAT accepts (no '|') but that stresses escaping and whitespace handling — with at least
 * one visible character: text that prints blank (only NBSP, zero-width spaces…) is refused like an
 * empty one (validate/text.ts isBlank; the validation test covers that refusal).
 */
export function hostileText(max: number): fc.Arbitrary<string> {
  const piece = fc.constantFrom(...HOSTILE_CHARS);
  const short = fc.array(piece, { minLength: 1, maxLength: 40 }).map((p) => p.join(''));
  const long = fc.array(piece, { minLength: Math.min(max, 600), maxLength: max }).map((p) => p.join(''));
  return fc.oneof({ weight: 5, arbitrary: short }, { weight: 1, arbitrary: long }).filter((s) => {
    // 1..max code points once XML whitespace is collapsed (XSD length facets count after collapse).
    const collapsed = s.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, '').replace(/[ \t\r\n]+/g, ' ');
    const length = [...collapsed].length;
    return length >= 1 && length <= max && !isBlank(s);
  });
}

/** A decimal string with 0..maxDecimals decimals and an integer part in [minInt, maxInt]. */
function decimal(minInt: number, maxInt: number, maxDecimals: number): fc.Arbitrary<string> {
  return fc
    .tuple(fc.integer({ min: minInt, max: maxInt }), fc.integer({ min: 0, max: maxDecimals }), fc.nat())
    .map(([int, decimals, frac]) =>
      decimals === 0 ? String(int) : `${int}.${String(frac % 10 ** decimals).padStart(decimals, '0')}`,
    );
}

// Greater than 0: a PAC refuses ValorUnitario 0 on an Ingreso (CFDI40166).
const amount = fc.oneof(
  { weight: 3, arbitrary: decimal(0, 5_000, 2).filter((s) => !/^0(\.0*)?$/.test(s)) },
  { weight: 1, arbitrary: decimal(0, 0, 6).filter((s) => s !== '0' && !/^0\.0*$/.test(s)) }, // tiny
  { weight: 1, arbitrary: decimal(1_000_000, 9_999_999_999, 6) }, // large
);

const traslado = fc.constantFrom(
  { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.160000' },
  { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.080000' },
  { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.000000' },
  { impuesto: '002', tipoFactor: 'Exento' },
  { impuesto: '003', tipoFactor: 'Tasa', tasaOCuota: '0.265000' },
);
const retenciones = fc.constantFrom(
  [],
  [{ impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.100000' }],
  [
    { impuesto: '001', tipoFactor: 'Tasa', tasaOCuota: '0.012500' },
    { impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: '0.106667' },
  ],
);

const concepto = fc
  .record({
    claveProdServ: fc.constantFrom('01010101', '43211503', '86121503', '80141628'),
    noIdentificacion: fc.option(hostileText(100), { nil: undefined }),
    cantidad: fc.oneof(
      decimal(1, 1_000, 6),
      decimal(0, 0, 6).filter((s) => !/^0(\.0*)?$/.test(s)),
    ),
    claveUnidad: fc.constantFrom('H87', 'E48', 'ACT', 'KGM', 'XBX'),
    unidad: fc.option(hostileText(20), { nil: undefined }),
    descripcion: hostileText(1000),
    valorUnitario: amount,
    descuentoCents: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
    objetoImp: fc.constantFrom('01', '02', '02', '02', '03'),
    traslados: fc.uniqueArray(traslado, {
      minLength: 1,
      maxLength: 2,
      selector: (t) => `${t.impuesto}|${t.tipoFactor}`,
    }),
    retenciones,
  })
  .map(({ descuentoCents, objetoImp, traslados, retenciones, noIdentificacion, unidad, ...c }) => {
    // A descuento only where the importe is surely ≥ 1.00 (cantidad ≥ 1 and valorUnitario ≥ 1).
    const descuento =
      descuentoCents !== undefined && Number.parseInt(c.cantidad, 10) >= 1 && Number.parseInt(c.valorUnitario, 10) >= 1
        ? (descuentoCents / 100).toFixed(2)
        : undefined;
    // Taxes need a base above zero; a tiny importe that rounds to 0.00 is sold as "no objeto".
    const base = new BigNumber(c.cantidad)
      .times(c.valorUnitario)
      .decimalPlaces(2, BigNumber.ROUND_HALF_UP)
      .minus(descuento ?? 0);
    const taxed = objetoImp === '02' && base.isGreaterThan(0);
    return {
      ...c,
      ...(noIdentificacion !== undefined ? { noIdentificacion } : {}),
      ...(unidad !== undefined ? { unidad } : {}),
      ...(descuento !== undefined ? { descuento } : {}),
      objetoImp: taxed ? '02' : objetoImp === '02' ? '01' : objetoImp,
      traslados: taxed ? traslados : [],
      retenciones: taxed ? [...retenciones] : [],
    };
  });

/** Valid Ingreso requests with hostile text and 1..maxConceptos conceptos. */
export function ingresoArbitrary(maxConceptos = 100): fc.Arbitrary<InvoiceRequestInput> {
  return fc
    .record({
      sourceId: fc.string({ minLength: 1, maxLength: 60 }),
      issuedAt: fc.date({
        min: new Date('2024-01-01T00:00:00Z'),
        max: new Date('2027-05-01T00:00:00Z'),
        noInvalidDate: true,
      }),
      serie: fc.option(hostileText(25), { nil: undefined }),
      folio: fc.option(fc.integer({ min: 1, max: 99_999_999 }).map(String), { nil: undefined }),
      lugarExpedicion: fc.constantFrom('06600', '22000', '77500', '83000', '42501', '31000'),
      formaPago: fc.constantFrom('01', '03', '04', '28'),
      receptorNombre: hostileText(300),
      conceptos: fc.array(concepto, { minLength: 1, maxLength: maxConceptos }),
    })
    .map((g) => ({
      tipoDeComprobante: 'I' as const,
      sourceId: g.sourceId,
      issuedAt: g.issuedAt.toISOString(),
      ...(g.serie !== undefined ? { serie: g.serie } : {}),
      ...(g.folio !== undefined ? { folio: g.folio } : {}),
      lugarExpedicion: g.lugarExpedicion,
      formaPago: g.formaPago,
      metodoPago: 'PUE',
      emisor: { rfc: 'EKU9003173C9', nombre: 'ESCUELA KEMPER URGATE', regimenFiscal: '601' },
      receptor: {
        rfc: 'CACX7605101P8',
        nombre: g.receptorNombre,
        domicilioFiscalReceptor: '36257',
        regimenFiscalReceptor: '612',
        usoCFDI: 'G03',
      },
      conceptos: g.conceptos,
    }));
}
