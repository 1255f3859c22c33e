/**
 * "Importe con letra" for the printed representation, as Mexican invoices write it:
 * `MIL CIENTO SESENTA PESOS 00/100 M.N.`, `VEINTIÚN DÓLARES 50/100 USD`. From the decimal string of
 * the amount (never a float), rounded to cents half up; up to 999 999 999 999 999.99.
 */

const UNITS = [
  '',
  'UNO',
  'DOS',
  'TRES',
  'CUATRO',
  'CINCO',
  'SEIS',
  'SIETE',
  'OCHO',
  'NUEVE',
  'DIEZ',
  'ONCE',
  'DOCE',
  'TRECE',
  'CATORCE',
  'QUINCE',
  'DIECISÉIS',
  'DIECISIETE',
  'DIECIOCHO',
  'DIECINUEVE',
  'VEINTE',
  'VEINTIUNO',
  'VEINTIDÓS',
  'VEINTITRÉS',
  'VEINTICUATRO',
  'VEINTICINCO',
  'VEINTISÉIS',
  'VEINTISIETE',
  'VEINTIOCHO',
  'VEINTINUEVE',
];
const TENS = ['', '', '', 'TREINTA', 'CUARENTA', 'CINCUENTA', 'SESENTA', 'SETENTA', 'OCHENTA', 'NOVENTA'];
const HUNDREDS = [
  '',
  'CIENTO',
  'DOSCIENTOS',
  'TRESCIENTOS',
  'CUATROCIENTOS',
  'QUINIENTOS',
  'SEISCIENTOS',
  'SETECIENTOS',
  'OCHOCIENTOS',
  'NOVECIENTOS',
];

/** 1–999 in words; `uno` ends in UNO (a number alone) or UN/ÚN (before a noun: PESOS, MIL, MILLONES). */
function hundreds(n: number, beforeNoun: boolean): string {
  if (n === 100) return 'CIEN';
  const h = Math.floor(n / 100);
  const rest = n % 100;
  let tail = '';
  if (rest > 0 && rest < 30) tail = UNITS[rest]!;
  else if (rest >= 30) tail = TENS[Math.floor(rest / 10)]! + (rest % 10 ? ` Y ${UNITS[rest % 10]!}` : '');
  if (beforeNoun) tail = tail.replace(/VEINTIUNO$/, 'VEINTIÚN').replace(/UNO$/, 'UN');
  return [HUNDREDS[h]!, tail].filter(Boolean).join(' ');
}

/** An integer (as digits) in words, before a noun: 21 → VEINTIÚN, 1 000 000 → UN MILLÓN. */
export function integerInWords(digits: string): string {
  const n = BigInt(digits);
  if (n === 0n) return 'CERO';
  if (n >= 10n ** 15n) throw new RangeError(`too large to write: ${digits}`);
  const millions = Number(n / 1_000_000n);
  const thousands = Number((n / 1000n) % 1000n);
  const units = Number(n % 1000n);
  const parts: string[] = [];
  if (millions > 0) {
    // Millions count in thousands of millions too: 1 500 000 000 → MIL QUINIENTOS MILLONES.
    parts.push(millions === 1 ? 'UN MILLÓN' : `${thousandsInWords(millions)} MILLONES`);
  }
  if (thousands > 0) parts.push(thousands === 1 ? 'MIL' : `${hundreds(thousands, true)} MIL`);
  if (units > 0) parts.push(hundreds(units, true));
  return parts.join(' ');
}

/** 1–999 999 before a noun (the count of millions). */
function thousandsInWords(n: number): string {
  const high = Math.floor(n / 1000);
  const low = n % 1000;
  return [high === 0 ? '' : high === 1 ? 'MIL' : `${hundreds(high, true)} MIL`, low ? hundreds(low, true) : '']
    .filter(Boolean)
    .join(' ');
}

/** How each currency is named: plural, singular, and what follows the cents. */
const CURRENCIES: Record<string, { plural: string; singular: string; suffix: string }> = {
  MXN: { plural: 'PESOS', singular: 'PESO', suffix: 'M.N.' },
  USD: { plural: 'DÓLARES', singular: 'DÓLAR', suffix: 'USD' },
  EUR: { plural: 'EUROS', singular: 'EURO', suffix: 'EUR' },
  CAD: { plural: 'DÓLARES CANADIENSES', singular: 'DÓLAR CANADIENSE', suffix: 'CAD' },
  GBP: { plural: 'LIBRAS ESTERLINAS', singular: 'LIBRA ESTERLINA', suffix: 'GBP' },
  JPY: { plural: 'YENES', singular: 'YEN', suffix: 'JPY' },
};

/**
 * `1160.00`, `MXN` → `MIL CIENTO SESENTA PESOS 00/100 M.N.`. A currency without a name here is
 * written with its code (`… 00/100 CHF`). "DE" goes before the currency after an exact million
 * (`UN MILLÓN DE PESOS`).
 */
export function amountInWords(amount: string, moneda: string): string {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(amount);
  if (!match) throw new RangeError(`not an amount: ${amount}`);
  let integer = BigInt(match[1]!);
  const fraction = (match[2] ?? '').padEnd(3, '0');
  let cents = Number(fraction.slice(0, 2)) + (Number(fraction[2]) >= 5 ? 1 : 0);
  if (cents === 100) {
    integer += 1n;
    cents = 0;
  }
  const currency = CURRENCIES[moneda] ?? { plural: moneda, singular: moneda, suffix: moneda };
  const words = integerInWords(integer.toString());
  const exactMillions = integer >= 1_000_000n && integer % 1_000_000n === 0n;
  const name = integer === 1n ? currency.singular : currency.plural;
  return `${words}${exactMillions ? ' DE' : ''} ${name} ${String(cents).padStart(2, '0')}/100 ${currency.suffix}`;
}
