/**
 * The CFDI's FormaPago (c_FormaPago) of money a provider received, from how it was paid. One table
 * per provider; docs/webhooks.md ("FormaPago") shows both. A method not listed gets
 * DEFAULT_FORMA_PAGO. A payment's metadata `forma_pago` (a c_FormaPago code other than 99) wins
 * over the method, for merchants who know better.
 */
import { catalogs } from '@timbra/cfdi-core';

/** Stripe: `payment_method_details.type`, and for cards their `funding`. */
export function stripeFormaPago(
  details: { type: string; card?: { funding?: string | null } | null } | null | undefined,
): string | undefined {
  if (!details) return undefined;
  if (details.type === 'card' || details.type === 'card_present') {
    const funding = details.card?.funding;
    return funding === 'credit' ? '04' : funding === 'debit' || funding === 'prepaid' ? '28' : undefined;
  }
  return STRIPE_METHODS[details.type];
}

const STRIPE_METHODS: Readonly<Record<string, string>> = {
  oxxo: '01', // cash at an OXXO store
  customer_balance: '03', // bank transfer (SPEI) to the customer's balance
};

/** Mercado Pago: `payment_type_id`. */
export function mercadoPagoFormaPago(paymentType: string | null | undefined): string | undefined {
  return MERCADOPAGO_TYPES[paymentType ?? ''];
}

const MERCADOPAGO_TYPES: Readonly<Record<string, string>> = {
  credit_card: '04',
  debit_card: '28',
  prepaid_card: '28',
  account_money: '05', // monedero electrónico (Mercado Pago balance)
  bank_transfer: '03',
  ticket: '01', // cash (OXXO and other stores)
  atm: '01',
};

/** The FormaPago to invoice: the metadata's valid `forma_pago`, else the method's, else the default. */
export function formaPagoOf(
  metadata: Record<string, unknown> | null | undefined,
  fromMethod: string | undefined,
  fallback: string,
): string {
  const given = typeof metadata?.forma_pago === 'string' ? metadata.forma_pago.trim() : '';
  if (given !== '99' && Object.hasOwn(catalogs.FORMA_PAGO, given)) return given;
  return fromMethod ?? fallback;
}
