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
import Stripe from 'stripe';
import {
  chargeOf,
  checkoutItem,
  checkoutSessionOf,
  FakeError,
  id,
  invoiceLine,
  invoiceOf,
  invoicePaymentOf,
  now,
  paymentIntentOf,
} from './stripe-objects.ts';
import {
  type FakeBalanceTransaction,
  type FakeCharge,
  type FakeCheckoutSession,
  type FakeEvent,
  type FakeInvoice,
  type FakeInvoiceLineItem,
  type FakeInvoicePayment,
  type FakeLineItem,
  type FakePaymentIntent,
  type FakeProduct,
  type FakeRefund,
  type NewCheckoutLine,
  type NewStripePayment,
} from './stripe-types.ts';

export { FakeError } from './stripe-objects.ts';
export { STRIPE_METHODS, type FakeEvent, type StripeMethod } from './stripe-types.ts';

/** Stripe's payments, as a merchant's account holds them; every change returns the events Stripe sends. */
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
   * Where each object lives, by its id: the connected account it was made on (none: the platform's
   * own) and whether it is live — an API read must come with that `Stripe-Account` and mode's key.
   */
  readonly scopes = new Map<string, { account: string | undefined; livemode: boolean }>();

  /** The object's account and mode (the platform's own, test mode, for one made without them). */
  scopeOf(objectId: string): { account: string | undefined; livemode: boolean } {
    return this.scopes.get(objectId) ?? { account: undefined, livemode: false };
  }

  /** Puts `ids` where `from` is (a refund where its charge is, a balance transaction with it). */
  private scopeLike(from: string, ...ids: string[]): void {
    const scope = this.scopes.get(from);
    if (scope) for (const i of ids) this.scopes.set(i, scope);
  }

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
    const lines = input.lines.map((line) => invoiceLine(line, invoiceId, this.product(line).id, currency));
    const amount = lines.reduce((sum, line) => sum + line.amount, 0);
    const made = this.createPayment({ ...input, amount, capture: 'automatic' });
    const invoice = invoiceOf(invoiceId, amount, currency, made.paymentIntent.created, input);
    const payment = invoicePaymentOf(invoice, made.paymentIntent.id);
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
    const items = input.lines.map((line) => checkoutItem(line, this.product(line).id, currency));
    const amount = items.reduce((sum, item) => sum + item.amount_total, 0);
    const made = this.createPayment({ ...input, amount, capture: 'automatic' });
    const session = checkoutSessionOf(amount, currency, made.paymentIntent, input);
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
    const pi = paymentIntentOf(input, paymentMethod, created);
    const charge = chargeOf(input, pi, paymentMethod, created);
    pi.latest_charge = charge.id;
    if (input.account !== undefined || input.livemode) {
      const scope = { account: input.account, livemode: input.livemode ?? false };
      pi.livemode = charge.livemode = scope.livemode;
      this.scopes.set(pi.id, scope);
      this.scopes.set(charge.id, scope);
    }
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
    this.scopeLike(charge.id, refund.id);
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
    this.scopeLike(charge.id, txn.id);
    return txn.id;
  }

  /** An event as Stripe sends it: the object as it is now (a copy), of the library's API version. */
  private event(
    type: string,
    object: FakeCharge | FakePaymentIntent | FakeRefund | FakeCheckoutSession | FakeInvoice,
    created = now(),
  ): FakeEvent {
    // An event of a connected account's object names the account (Connect); its mode is the object's.
    const scope = this.scopeOf(object.id);
    return {
      id: id('evt'),
      object: 'event',
      ...(scope.account !== undefined ? { account: scope.account } : {}),
      api_version: Stripe.API_VERSION,
      created,
      data: { object: structuredClone(object) },
      livemode: scope.livemode,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: type as Stripe.Event['type'],
    };
  }
}
