/**
 * New Stripe objects as the fake makes them (their types: stripe-types.ts): a payment's
 * PaymentIntent and Charge, a Checkout Session and its line items, a Stripe Invoice, its lines and
 * its InvoicePayment; and an error as Stripe's API answers it.
 */
import { randomBytes } from 'node:crypto';
import type Stripe from 'stripe';
import {
  type FakeCharge,
  type FakePaymentIntent,
  type FakeLineItem,
  type FakeCheckoutSession,
  type FakeInvoice,
  type FakeInvoiceLineItem,
  type FakeInvoicePayment,
  type StripeMethod,
  type NewStripePayment,
  type NewCheckoutLine,
} from './stripe-types.ts';

/** A new object's id, Stripe's way: its prefix and random hex. */
export const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
/** Stripe's clock: seconds since the epoch. */
export const now = () => Math.floor(Date.now() / 1000);

/** What a Charge says of the payment method it was paid with. */
export function methodDetails(method: StripeMethod): Stripe.Charge.PaymentMethodDetails {
  if (method === 'oxxo') return { type: 'oxxo', oxxo: { number: '12345678901234657890123456789012' } };
  if (method === 'customer_balance') return { type: 'customer_balance', customer_balance: {} };
  const funding = method.slice('card_'.length);
  return {
    type: 'card',
    card: {
      brand: 'visa',
      country: 'MX',
      exp_month: 12,
      exp_year: 2030,
      funding,
      last4: funding === 'debit' ? '5556' : '4242',
    } as Stripe.Charge.PaymentMethodDetails.Card,
  };
}

/** A new payment's PaymentIntent: succeeded when captured at once, else waiting for its capture. */
export function paymentIntentOf(input: NewStripePayment, paymentMethod: string, created: number): FakePaymentIntent {
  const captured = input.capture === 'automatic';
  return {
    id: id('pi'),
    object: 'payment_intent',
    amount: input.amount,
    amount_capturable: captured ? 0 : input.amount,
    amount_received: captured ? input.amount : 0,
    capture_method: input.capture,
    created,
    currency: input.currency.toLowerCase(),
    customer: input.customer ?? null,
    description: input.description,
    receipt_email: input.receiptEmail ?? null,
    latest_charge: null,
    livemode: false,
    metadata: input.metadata,
    payment_method: paymentMethod,
    payment_method_types: [input.method.startsWith('card') ? 'card' : input.method],
    status: captured ? 'succeeded' : 'requires_capture',
  };
}

/** The Charge of a new payment (its balance transaction is added when it is captured). */
export function chargeOf(
  input: NewStripePayment,
  pi: FakePaymentIntent,
  paymentMethod: string,
  created: number,
): FakeCharge {
  const captured = input.capture === 'automatic';
  return {
    id: id('ch'),
    object: 'charge',
    amount: input.amount,
    amount_captured: captured ? input.amount : 0,
    amount_refunded: 0,
    balance_transaction: null,
    captured,
    created,
    currency: pi.currency,
    description: input.description,
    receipt_email: input.receiptEmail ?? null,
    livemode: false,
    metadata: input.metadata,
    paid: true,
    payment_intent: pi.id,
    payment_method: paymentMethod,
    payment_method_details: methodDetails(input.method),
    refunded: false,
    status: 'succeeded',
  };
}

/** A Checkout Session's line item for one line sold, with its one-time price. */
export function checkoutItem(line: NewCheckoutLine, productId: string, currency: string): FakeLineItem {
  const total = line.unitAmount * line.quantity;
  return {
    id: id('li'),
    object: 'item',
    amount_discount: 0,
    amount_subtotal: total,
    amount_tax: 0,
    amount_total: total,
    currency,
    description: line.name,
    quantity: line.quantity,
    price: {
      id: id('price'),
      object: 'price',
      currency,
      unit_amount: line.unitAmount,
      type: 'one_time',
      product: productId,
    },
  };
}

/** A Checkout Session in payment mode, complete and paid by `paymentIntent`. */
export function checkoutSessionOf(
  amount: number,
  currency: string,
  paymentIntent: FakePaymentIntent,
  input: Pick<NewStripePayment, 'customer' | 'metadata'>,
): FakeCheckoutSession {
  return {
    id: id('cs_test'),
    object: 'checkout.session',
    amount_subtotal: amount,
    amount_total: amount,
    created: paymentIntent.created,
    currency,
    customer: input.customer ?? null,
    livemode: false,
    metadata: input.metadata,
    mode: 'payment',
    payment_intent: paymentIntent.id,
    payment_status: 'paid',
    status: 'complete',
  };
}

/** A Stripe Invoice's line for one line sold (`amount` = quantity × unit amount, no tax or discount). */
export function invoiceLine(
  line: NewCheckoutLine,
  invoiceId: string,
  productId: string,
  currency: string,
): FakeInvoiceLineItem {
  const amount = line.unitAmount * line.quantity;
  return {
    id: id('il'),
    object: 'line_item',
    amount,
    currency,
    description: line.name,
    discount_amounts: [],
    invoice: invoiceId,
    livemode: false,
    metadata: {},
    quantity: line.quantity,
    subtotal: amount,
    taxes: [],
    pricing: {
      type: 'price_details',
      price_details: { price: id('price'), product: productId },
      unit_amount_decimal: String(line.unitAmount),
    },
  };
}

/** A Stripe Invoice paid at once. */
export function invoiceOf(
  invoiceId: string,
  amount: number,
  currency: string,
  created: number,
  input: Pick<NewStripePayment, 'customer' | 'metadata'>,
): FakeInvoice {
  return {
    id: invoiceId,
    object: 'invoice',
    amount_due: amount,
    amount_paid: amount,
    created,
    currency,
    customer: input.customer ?? null,
    livemode: false,
    metadata: input.metadata,
    status: 'paid',
    total: amount,
  };
}

/** The InvoicePayment that links a Stripe Invoice to the PaymentIntent that paid it (API 2025-03-31 on). */
export function invoicePaymentOf(invoice: FakeInvoice, paymentIntentId: string): FakeInvoicePayment {
  return {
    id: id('inpay'),
    object: 'invoice_payment',
    amount_paid: invoice.amount_paid,
    amount_requested: invoice.amount_paid,
    created: invoice.created,
    currency: invoice.currency,
    invoice: invoice.id,
    is_default: true,
    livemode: false,
    status: 'paid',
    payment: { type: 'payment_intent', payment_intent: paymentIntentId },
  };
}

/** An error as Stripe's API answers it: `{ error: { type, code, message } }` with its status. */
export class FakeError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  body() {
    return { error: { type: 'invalid_request_error', code: this.code, message: this.message } };
  }
}
