/**
 * A local Stripe: PaymentIntents, Charges and Refunds as Stripe's API (the version the official
 * `stripe` library pins) shows them, the read endpoints Timbra calls, and the events Stripe sends for
 * each change — typed with the library's own types, so the fake cannot drift from Stripe's shapes.
 *
 * What happens, as in Stripe:
 * - automatic capture: `charge.succeeded` (captured) then `payment_intent.succeeded`;
 * - manual capture: `charge.succeeded` with `captured: false` and
 *   `payment_intent.amount_capturable_updated`; on capture (possibly for less) `charge.captured`
 *   and `payment_intent.succeeded`, with `amount_captured`/`amount_received` the captured amount;
 * - a refund: `refund.created` (and `charge.refunded` when it succeeded — whose charge, since API
 *   version 2022-11-15, does not list its refunds); a refund's later change of status:
 *   `refund.updated` and `charge.refund.updated` (and `refund.failed` when it failed, or
 *   `charge.refunded` when it succeeded).
 */
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';

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
  'id' | 'object' | 'api_version' | 'created' | 'livemode' | 'pending_webhooks' | 'request' | 'type'
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
}

/** A line of a Checkout Session: a product (with its metadata), a quantity and a unit price in minor units. */
export interface NewCheckoutLine {
  name: string;
  quantity: number;
  unitAmount: number;
  metadata: Record<string, string>;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

function methodDetails(method: StripeMethod): Stripe.Charge.PaymentMethodDetails {
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

export class StripeFake {
  readonly charges = new Map<string, FakeCharge>();
  readonly paymentIntents = new Map<string, FakePaymentIntent>();
  readonly refunds = new Map<string, FakeRefund>();
  readonly balanceTransactions = new Map<string, FakeBalanceTransaction>();
  readonly products = new Map<string, FakeProduct>();
  readonly checkoutSessions = new Map<string, FakeCheckoutSession>();
  readonly lineItems = new Map<string, FakeLineItem[]>();
  private readonly settlementRates = new Map<string, number | undefined>();
  readonly invoices = new Map<string, FakeInvoice>();
  readonly invoiceLines = new Map<string, FakeInvoiceLineItem[]>();
  readonly invoicePayments = new Map<string, FakeInvoicePayment>();

  /**
   * A Stripe Invoice paid at once: its products, its lines (each `amount` = quantity × unit amount,
   * no tax or discount), the PaymentIntent and Charge that paid it, its InvoicePayment, and the events
   * — the charge's, the PaymentIntent's, then `invoice.paid`. (Since API 2025-03-31 a PaymentIntent
   * does not name its invoice: the InvoicePayment links them.)
   */
  createInvoice(input: Omit<NewStripePayment, 'amount' | 'capture'> & { lines: NewCheckoutLine[] }): {
    invoice: FakeInvoice;
    paymentIntent: FakePaymentIntent;
    charge: FakeCharge;
    events: FakeEvent[];
  } {
    const currency = input.currency.toLowerCase();
    const invoiceId = id('in');
    const lines: FakeInvoiceLineItem[] = input.lines.map((line) => {
      const product = this.product(line);
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
          price_details: { price: id('price'), product: product.id },
          unit_amount_decimal: String(line.unitAmount),
        },
      };
    });
    const amount = lines.reduce((sum, line) => sum + line.amount, 0);
    const made = this.createPayment({ ...input, amount, capture: 'automatic' });
    const invoice: FakeInvoice = {
      id: invoiceId,
      object: 'invoice',
      amount_due: amount,
      amount_paid: amount,
      created: made.paymentIntent.created,
      currency,
      customer: input.customer ?? null,
      livemode: false,
      metadata: input.metadata,
      status: 'paid',
      total: amount,
    };
    const payment: FakeInvoicePayment = {
      id: id('inpay'),
      object: 'invoice_payment',
      amount_paid: amount,
      amount_requested: amount,
      created: invoice.created,
      currency,
      invoice: invoiceId,
      is_default: true,
      livemode: false,
      status: 'paid',
      payment: { type: 'payment_intent', payment_intent: made.paymentIntent.id },
    };
    this.invoices.set(invoice.id, invoice);
    this.invoiceLines.set(invoice.id, lines);
    this.invoicePayments.set(payment.id, payment);
    return {
      invoice,
      paymentIntent: made.paymentIntent,
      charge: made.charge,
      events: [...made.events, this.event('invoice.paid', invoice, invoice.created)],
    };
  }

  /**
   * A Checkout Session in payment mode paid at once: its products and prices, the PaymentIntent and
   * Charge behind it (createPayment), and the events Stripe sends — the charge's and the
   * PaymentIntent's, then `checkout.session.completed`.
   */
  createCheckoutSession(input: Omit<NewStripePayment, 'amount' | 'capture'> & { lines: NewCheckoutLine[] }): {
    session: FakeCheckoutSession;
    paymentIntent: FakePaymentIntent;
    charge: FakeCharge;
    events: FakeEvent[];
  } {
    const currency = input.currency.toLowerCase();
    const items: FakeLineItem[] = input.lines.map((line) => {
      const product = this.product(line);
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
          product: product.id,
        },
      };
    });
    const amount = items.reduce((sum, item) => sum + item.amount_total, 0);
    const made = this.createPayment({ ...input, amount, capture: 'automatic' });
    const session: FakeCheckoutSession = {
      id: id('cs_test'),
      object: 'checkout.session',
      amount_subtotal: amount,
      amount_total: amount,
      created: made.paymentIntent.created,
      currency,
      customer: input.customer ?? null,
      livemode: false,
      metadata: input.metadata,
      mode: 'payment',
      payment_intent: made.paymentIntent.id,
      payment_status: 'paid',
      status: 'complete',
    };
    this.checkoutSessions.set(session.id, session);
    this.lineItems.set(session.id, items);
    return {
      session,
      paymentIntent: made.paymentIntent,
      charge: made.charge,
      events: [...made.events, this.event('checkout.session.completed', session, session.created)],
    };
  }

  /** A payment: its PaymentIntent and Charge, and the events Stripe sends for it. */
  createPayment(input: NewStripePayment): {
    paymentIntent: FakePaymentIntent;
    charge: FakeCharge;
    events: FakeEvent[];
  } {
    const created = input.created ?? now();
    const captured = input.capture === 'automatic';
    const paymentMethod = id('pm');
    const pi: FakePaymentIntent = {
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
    const charge: FakeCharge = {
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
    pi.latest_charge = charge.id;
    this.settlementRates.set(pi.id, input.settlementExchangeRate);
    if (captured) charge.balance_transaction = this.settle(charge, input.settlementExchangeRate);
    this.paymentIntents.set(pi.id, pi);
    this.charges.set(charge.id, charge);
    const events = captured
      ? [this.event('charge.succeeded', charge, created), this.event('payment_intent.succeeded', pi, created)]
      : [
          this.event('charge.succeeded', charge, created),
          this.event('payment_intent.amount_capturable_updated', pi, created),
        ];
    return { paymentIntent: pi, charge, events };
  }

  /** Captures an authorized payment, all of it or `amount` (less: the rest is released). */
  capture(paymentIntentId: string, amount?: number): { charge: FakeCharge; events: FakeEvent[] } {
    const pi = this.paymentIntents.get(paymentIntentId);
    if (!pi) throw new FakeError(404, 'resource_missing', `No such payment_intent: '${paymentIntentId}'`);
    if (pi.status !== 'requires_capture')
      throw new FakeError(400, 'payment_intent_unexpected_state', `This PaymentIntent is ${pi.status}`);
    const take = amount ?? pi.amount_capturable;
    if (!Number.isSafeInteger(take) || take <= 0 || take > pi.amount_capturable)
      throw new FakeError(400, 'amount_too_large', 'The capture amount is more than the authorized amount');
    const charge = this.charges.get(pi.latest_charge as string)!;
    Object.assign(charge, { captured: true, amount_captured: take });
    charge.balance_transaction = this.settle(charge, this.settlementRates.get(pi.id));
    Object.assign(pi, { status: 'succeeded', amount_received: take, amount_capturable: 0 });
    return { charge, events: [this.event('charge.captured', charge), this.event('payment_intent.succeeded', pi)] };
  }

  /** A refund of a captured charge, created in `status` (Stripe: most card refunds succeed at once). */
  refund(input: {
    paymentIntent?: string;
    charge?: string;
    amount?: number;
    status: 'succeeded' | 'pending' | 'failed';
  }): { refund: FakeRefund; events: FakeEvent[] } {
    const chargeId = input.charge ?? (this.paymentIntents.get(input.paymentIntent ?? '')?.latest_charge as string);
    const charge = this.charges.get(chargeId ?? '');
    if (!charge) throw new FakeError(404, 'resource_missing', `No such charge: '${chargeId ?? input.paymentIntent}'`);
    if (!charge.captured) throw new FakeError(400, 'charge_not_captured', 'An uncaptured charge cannot be refunded');
    const amount = input.amount ?? charge.amount_captured - charge.amount_refunded;
    if (!Number.isSafeInteger(amount) || amount <= 0 || amount > charge.amount_captured - charge.amount_refunded)
      throw new FakeError(400, 'charge_already_refunded', 'The refund is more than what is left of the charge');
    const refund: FakeRefund = {
      id: id('re'),
      object: 'refund',
      amount,
      charge: charge.id,
      created: now(),
      currency: charge.currency,
      metadata: {},
      payment_intent: charge.payment_intent,
      reason: 'requested_by_customer',
      status: input.status,
      ...(input.status === 'failed' ? { failure_reason: 'expired_or_canceled_card' as const } : {}),
    };
    this.refunds.set(refund.id, refund);
    const events = [this.event('refund.created', refund)];
    if (input.status === 'succeeded') events.push(this.refundSucceeded(charge, refund));
    return { refund, events };
  }

  /** A refund changes status later (a pending one succeeds; a succeeded one fails or is canceled). */
  updateRefund(
    refundId: string,
    status: 'succeeded' | 'failed' | 'canceled',
  ): { refund: FakeRefund; events: FakeEvent[] } {
    const refund = this.refunds.get(refundId);
    if (!refund) throw new FakeError(404, 'resource_missing', `No such refund: '${refundId}'`);
    const charge = this.charges.get(refund.charge as string)!;
    const was = refund.status;
    refund.status = status;
    if (status === 'failed') refund.failure_reason = 'lost_or_stolen_card';
    const events = [this.event('refund.updated', refund), this.event('charge.refund.updated', refund)];
    if (status === 'succeeded' && was !== 'succeeded') events.push(this.refundSucceeded(charge, refund));
    if (status !== 'succeeded' && was === 'succeeded') {
      charge.amount_refunded -= refund.amount;
      charge.refunded = charge.amount_refunded === charge.amount_captured;
    }
    if (status === 'failed') events.push(this.event('refund.failed', refund));
    return { refund, events };
  }

  private refundSucceeded(charge: FakeCharge, _refund: FakeRefund): FakeEvent {
    charge.amount_refunded += _refund.amount;
    charge.refunded = charge.amount_refunded === charge.amount_captured;
    return this.event('charge.refunded', charge);
  }

  /** A product for a line being sold (kept, so GET /v1/products/{id} and expansions find it). */
  private product(line: NewCheckoutLine): FakeProduct {
    const product: FakeProduct = {
      id: id('prod'),
      object: 'product',
      name: line.name,
      metadata: line.metadata,
      active: true,
    };
    this.products.set(product.id, product);
    return product;
  }

  /** The balance transaction of a captured charge: in MXN at `exchangeRate`, or in its own currency. */
  private settle(charge: FakeCharge, exchangeRate: number | undefined): string {
    const inPesos = exchangeRate !== undefined && charge.currency !== 'mxn';
    const amount = inPesos ? Math.round(charge.amount_captured * exchangeRate) : charge.amount_captured;
    const fee = Math.round(amount * 0.036);
    const txn: FakeBalanceTransaction = {
      id: id('txn'),
      object: 'balance_transaction',
      amount,
      created: charge.created,
      currency: inPesos ? 'mxn' : charge.currency,
      exchange_rate: inPesos ? exchangeRate : null,
      fee,
      net: amount - fee,
      source: charge.id,
      status: 'available',
      type: 'charge',
    };
    this.balanceTransactions.set(txn.id, txn);
    return txn.id;
  }

  /** An event as Stripe sends it: the object as it is now (a copy), of the library's API version. */
  private event(
    type: string,
    object: FakeCharge | FakePaymentIntent | FakeRefund | FakeCheckoutSession | FakeInvoice,
    created = now(),
  ): FakeEvent {
    return {
      id: id('evt'),
      object: 'event',
      api_version: Stripe.API_VERSION,
      created,
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: type as Stripe.Event['type'],
    };
  }
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
