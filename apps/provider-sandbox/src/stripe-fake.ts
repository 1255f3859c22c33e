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
  | 'captured'
  | 'created'
  | 'currency'
  | 'description'
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
  | 'description'
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
export type FakeEvent = Pick<
  Stripe.Event,
  'id' | 'object' | 'api_version' | 'created' | 'livemode' | 'pending_webhooks' | 'request' | 'type'
> & { data: { object: FakeCharge | FakePaymentIntent | FakeRefund } };

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
      description: input.description,
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
      captured,
      created,
      currency: pi.currency,
      description: input.description,
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

  /** An event as Stripe sends it: the object as it is now (a copy), of the library's API version. */
  private event(type: string, object: FakeCharge | FakePaymentIntent | FakeRefund, created = now()): FakeEvent {
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
