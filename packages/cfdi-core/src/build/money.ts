import { BigNumber } from 'bignumber.js';

/**
 * Decimal arithmetic for amounts: a private BigNumber constructor so no other code's configuration
 * can change ours. Rounding is ROUND_HALF_UP, the rounding Anexo 20 describes for importes; additions
 * and multiplications are exact, divisions keep 20 decimals before the final rounding.
 */
export const Dec = BigNumber.clone({ DECIMAL_PLACES: 20, ROUNDING_MODE: BigNumber.ROUND_HALF_UP, EXPONENTIAL_AT: 1e9 });
export type Dec = BigNumber;

export const ZERO = new Dec(0);

/** Number of decimals written in a decimal string ("1.50" → 2, "3" → 0). */
export function decimalsOf(value: string): number {
  const dot = value.indexOf('.');
  return dot < 0 ? 0 : value.length - dot - 1;
}

/** Fixed-point text with exactly `decimals` decimals, rounded half up. */
export function fixed(value: Dec, decimals: number): string {
  return value.toFixed(decimals, BigNumber.ROUND_HALF_UP);
}

/** Sum of decimals (exact). */
export function sum(values: readonly Dec[]): Dec {
  let total = ZERO;
  for (const v of values) total = total.plus(v);
  return total;
}
