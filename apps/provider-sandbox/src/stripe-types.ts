/**
 * The Stripe objects the fake keeps: the fields of each it fills in, picked from the `stripe`
 * library's own types (so each must exist there, with its type), and what a new payment is made of.
 */
import type Stripe from 'stripe';

/** The fields of Stripe's objects this fake fills in: each must exist in Stripe's type, with its type. */
export type FakeCharge = Pick<
  Stripe.Charge,
  | 'id'
  | 'object'
  | 'amount'
  | 'amount_captured'
  | 'amount_refunded'
  | 'balance_transaction'
  | 'captured'
  | 'created'
  | 'currency'
  | 'description'
  | 'receipt_email'
  | 'livemode'
  | 'metadata'
  | 'paid'
  | 'payment_intent'
  | 'payment_method'
  | 'payment_method_details'
  | 'refunded'
  | 'status'
>;
export type FakePaymentIntent = Pick<
  Stripe.PaymentIntent,
  | 'id'
  | 'object'
  | 'amount'
  | 'amount_capturable'
  | 'amount_received'
  | 'capture_method'
  | 'created'
  | 'currency'
  | 'customer'
  | 'description'
  | 'receipt_email'
  | 'latest_charge'
  | 'livemode'
  | 'metadata'
  | 'payment_method'
  | 'payment_method_types'
  | 'status'
>;
export type FakeRefund = Pick<
  Stripe.Refund,
  'id' | 'object' | 'amount' | 'charge' | 'created' | 'currency' | 'metadata' | 'payment_intent' | 'reason' | 'status'
> & { failure_reason?: Stripe.Refund['failure_reason'] };
export type FakeBalanceTransaction = Pick<
  Stripe.BalanceTransaction,
  'id' | 'object' | 'amount' | 'created' | 'currency' | 'exchange_rate' | 'fee' | 'net' | 'source' | 'status' | 'type'
>;
export type FakeProduct = Pick<Stripe.Product, 'id' | 'object' | 'name' | 'metadata' | 'active'>;
export type FakeLineItem = Pick<
  Stripe.LineItem,
  | 'id'
  | 'object'
  | 'amount_discount'
  | 'amount_subtotal'
  | 'amount_tax'
  | 'amount_total'
  | 'currency'
  | 'description'
  | 'quantity'
> & {
  price: Pick<Stripe.Price, 'id' | 'object' | 'currency' | 'unit_amount' | 'type'> & { product: string };
};
export type FakeCheckoutSession = Pick<
  Stripe.Checkout.Session,
  | 'id'
  | 'object'
  | 'amount_subtotal'
  | 'amount_total'
  | 'created'
  | 'currency'
  | 'customer'
  | 'livemode'
  | 'metadata'
  | 'mode'
  | 'payment_intent'
  | 'payment_status'
  | 'status'
>;
export type FakeInvoice = Pick<
  Stripe.Invoice,
  | 'id'
  | 'object'
  | 'amount_due'
  | 'amount_paid'
  | 'created'
  | 'currency'
  | 'customer'
  | 'livemode'
  | 'metadata'
  | 'status'
  | 'total'
>;
export type FakeInvoiceLineItem = Pick<
  Stripe.InvoiceLineItem,
  | 'id'
  | 'object'
  | 'amount'
  | 'currency'
  | 'description'
  | 'discount_amounts'
  | 'invoice'
  | 'livemode'
  | 'metadata'
  | 'quantity'
  | 'subtotal'
  | 'taxes'
> & {
  pricing: { type: 'price_details'; price_details: { price: string; product: string }; unit_amount_decimal: string };
};
export type FakeInvoicePayment = Pick<
  Stripe.InvoicePayment,
  | 'id'
  | 'object'
  | 'amount_paid'
  | 'amount_requested'
  | 'created'
  | 'currency'
  | 'invoice'
  | 'is_default'
  | 'livemode'
  | 'status'
> & { payment: { type: 'payment_intent'; payment_intent: string } };
export type FakeEvent = Pick<
  Stripe.Event,
  'id' | 'object' | 'account' | 'api_version' | 'created' | 'livemode' | 'pending_webhooks' | 'request' | 'type'
> & { data: { object: FakeCharge | FakePaymentIntent | FakeRefund | FakeCheckoutSession | FakeInvoice } };

/** How the customer paid, as a test card or method (what decides the CFDI's FormaPago). */
export const STRIPE_METHODS = [
  'card_credit',
  'card_debit',
  'card_prepaid',
  'card_unknown',
  'oxxo',
  'customer_balance',
] as const;
export type StripeMethod = (typeof STRIPE_METHODS)[number];

export interface NewStripePayment {
  /** Minor units (centavos). */
  amount: number;
  currency: string;
  method: StripeMethod;
  capture: 'automatic' | 'manual';
  metadata: Record<string, string>;
  description: string | null;
  /** Unix seconds; default now (an older time makes old events, as a backfill does). */
  created?: number;
  /** The Stripe customer (cus_…) paying. */
  customer?: string | undefined;
  /** Where Stripe sends the receipt (PaymentIntent and Charge `receipt_email`). */
  receiptEmail?: string | undefined;
  /**
   * Money in another currency settled in pesos: the charge's balance transaction is in MXN with
   * this `exchange_rate` (pesos per unit). Default: settled in the charge's own currency.
   */
  settlementExchangeRate?: number | undefined;
  /**
   * Stripe Connect: the connected account (`acct_…`) the payment is made on — its objects are read
   * with `Stripe-Account: acct_…`, its events name it (`account`) and go to the Connect endpoint.
   */
  account?: string | undefined;
  /** A live-mode payment: read with the live secret key only (default test mode). */
  livemode?: boolean | undefined;
}

/** A line of a Checkout Session: a product (with its metadata), a quantity and a unit price in minor units. */
export interface NewCheckoutLine {
  name: string;
  quantity: number;
  unitAmount: number;
  metadata: Record<string, string>;
}
