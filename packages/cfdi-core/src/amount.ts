/**
 * The one grammar of money that enters Timbra — REST bodies, webhook payloads and objects fetched
 * from a provider's API all go through here before anything is stored:
 *
 * - a decimal: digits, optionally a point and up to the currency's decimals (ISO 4217 minor units,
 *   at most 2 — the precision Timbra stores), no sign, no exponent, no spaces, no NaN/Infinity;
 * - greater than zero, and at most `MAX_AMOUNT`;
 * - a provider's JSON number is read through its shortest decimal text (`100.1` → "100.1"), so a
 *   float that is not an exact amount (`0.30000000000000004`, `1e21`) is refused, never rounded;
 * - minor units (Stripe's integers) must be a safe positive integer.
 *
 * The database refuses the same values (CHECK constraints), so no other path can store them.
 */
import { BigNumber } from 'bignumber.js';
import { MONEDA } from './validate/catalogs.ts';

/** The largest amount accepted: 999,999,999,999.99 (12 integer digits). */
export const MAX_AMOUNT = '999999999999.99';

/** Why an amount was refused: a stable code and a sentence for people. */
export interface AmountProblem {
  code: 'not_a_decimal' | 'too_many_decimals' | 'not_positive' | 'too_large' | 'unknown_currency';
  message: string;
}

export type AmountResult = { ok: true; amount: string } | { ok: false; problem: AmountProblem };

const DECIMAL = /^(\d{1,40})(?:\.(\d{1,40}))?$/;
const MAX = new BigNumber(MAX_AMOUNT);

/** Decimals an amount in `currency` may have: the currency's minor units, at most 2. */
export function amountDecimals(currency: string): number | undefined {
  const moneda = Object.hasOwn(MONEDA, currency) ? MONEDA[currency] : undefined;
  return moneda === undefined ? undefined : Math.min(moneda.decimals, 2);
}

/**
 * Reads a decimal amount (a string, or a provider's JSON number) in `currency`.
 * @returns the amount with exactly the currency's decimals ("100.1" → "100.10"), or why not.
 */
export function parseAmount(value: unknown, currency: string): AmountResult {
  const decimals = amountDecimals(currency);
  if (decimals === undefined) return refuse('unknown_currency', `${currency} is not a supported currency`);
  const text = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
  const match = text === undefined ? null : DECIMAL.exec(text);
  if (!match)
    return refuse('not_a_decimal', 'a decimal like "1160.00": digits, an optional point, no sign or exponent');
  if ((match[2]?.length ?? 0) > decimals)
    return refuse('too_many_decimals', `at most ${decimals} decimal${decimals === 1 ? '' : 's'} in ${currency}`);
  return checked(new BigNumber(text!), decimals);
}

/** Reads minor units (an integer count of cents, as Stripe sends) in `currency`. */
export function parseMinorUnits(value: unknown, currency: string): AmountResult {
  const decimals = amountDecimals(currency);
  const minor = Object.hasOwn(MONEDA, currency) ? MONEDA[currency]!.decimals : undefined;
  if (decimals === undefined || minor === undefined)
    return refuse('unknown_currency', `${currency} is not a supported currency`);
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    return refuse('not_a_decimal', 'an integer number of minor units');
  return checked(new BigNumber(value).shiftedBy(-minor), decimals);
}

function checked(amount: BigNumber, decimals: number): AmountResult {
  if (!amount.isGreaterThan(0)) return refuse('not_positive', 'must be greater than 0');
  if (amount.isGreaterThan(MAX)) return refuse('too_large', `at most ${MAX_AMOUNT}`);
  if (amount.decimalPlaces()! > decimals) return refuse('too_many_decimals', `at most ${decimals} decimals`);
  return { ok: true, amount: amount.toFixed(decimals) };
}

function refuse(code: AmountProblem['code'], message: string): AmountResult {
  return { ok: false, problem: { code, message } };
}
