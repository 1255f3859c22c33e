import { BigNumber } from 'bignumber.js';
import { catalogs } from '@timbra/cfdi-core';

/** Minor units (Stripe's integers) to a decimal string with the currency's decimals. */
export function fromMinorUnits(amount: number, currency: string): string {
  const decimals = catalogs.MONEDA[currency]?.decimals ?? 2;
  return new BigNumber(amount).shiftedBy(-decimals).toFixed(decimals);
}

/** A provider's decimal number (Mercado Pago sends JSON numbers) to a 2-decimal string, without float math. */
export function fromDecimalNumber(amount: number | string): string {
  return new BigNumber(String(amount)).toFixed(2, BigNumber.ROUND_HALF_UP);
}
