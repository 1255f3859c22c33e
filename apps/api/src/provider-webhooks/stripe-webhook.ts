import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import Stripe from 'stripe';
import { parseMinorUnits } from '@timbra/cfdi-core';
import { hasUnstorableText } from '@timbra/db';
import { ApiError } from '../http/errors.ts';
import { MAX_CLOCK_SKEW_MS } from '../domain-errors.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Ingest, RefundFacts, WebhookDelivery } from './record-webhook.ts';
import { formaPagoOf, moneyIn, stripeFormaPago } from './money-in.ts';
import { prepareSale, type SaleDeps } from '../payments/sale.ts';
import { PoisonEvent, recordProviderEvent } from './record-event.ts';
import { amountOf, chargeOf, fromApi, idOf, stripeSaleDraft, text } from './stripe-sale.ts';

export interface StripeWebhookDeps {
  /** Where payments are recorded: group commit, one transaction per batch. */
  ingest: Ingest;
  secret: string | undefined;
  toleranceSeconds: number;
  /** The clock (tests). */
  now?: () => number;
  /** The Stripe API (official library, STRIPE_API_KEY, pointed at STRIPE_API_URL). */
  api: Stripe | undefined;
  defaultFormaPago: string;
  metrics: Metrics;
  /** Counts bad signatures per address (429 over the limit); a signed request is never limited by them. */
  failures?: FailureLimiter;
  /** Products, customers and exchange rates: what a sale's lines, customer and TipoCambio resolve against. */
  sale: SaleDeps;
  /** Look up each PaymentIntent's Checkout Session or Invoice for its line items (more API calls per payment). */
  lineItems: boolean;
}

type Effect = Omit<WebhookDelivery, 'event'> & { handled: boolean };

const IGNORED: Effect = { handled: false };

/**
 * POST /webhooks/stripe. Verifies `Stripe-Signature` on the raw body with the official library
 * (HMAC-SHA256, timestamp tolerance), works out what the event means — asking Stripe's API where the
 * event alone does not say — and records it (recordProviderEvent: once per event id, 2xx only after
 * commit; a signed event that cannot be recorded is stored as failed).
 *
 * - `payment_intent.succeeded` → the payment (amount received; FormaPago from its charge's method);
 * - `charge.succeeded` / `charge.captured` of a captured charge → the same payment (the
 *   PaymentIntent's id names both, so the two events never make two payments); an uncaptured charge
 *   (an authorization) is ignored until it is captured, and then invoiced for the captured amount;
 * - `charge.refunded` → every succeeded refund of the charge, listed from the API (since API version
 *   2022-11-15 the event does not carry them);
 * - `refund.created`, `refund.updated`, `refund.failed`, `charge.refund.updated` → the refund as the
 *   API shows it now: succeeded → recorded (once per refund id, with its Egreso); failed or canceled
 *   → reversed if it had been recorded; pending → nothing yet;
 * - anything else → recorded as ignored.
 */
const signatures = new Stripe('sk_timbra_signature_checks_only');

/**
 * Whether `Stripe-Signature` signs `body` with `secret` (the official library's check: HMAC-SHA256,
 * at most `toleranceSeconds` old) — and was not made ahead of our clock beyond the clocks' skew (the
 * library checks only age: a signature from the future was not made by Stripe now).
 */
export function stripeSigned(body: Buffer, header: string, secret: string, toleranceSeconds: number, nowMs: number) {
  try {
    signatures.webhooks.signature!.verifyHeader(body, header, secret, toleranceSeconds);
  } catch {
    return false;
  }
  const signedAt = Number(/(?:^|,)\s*t=(\d+)/.exec(header)?.[1]);
  return signedAt * 1000 <= nowMs + MAX_CLOCK_SKEW_MS;
}

export function stripeWebhook(deps: StripeWebhookDeps) {
  return async (req: Request, res: Response) => {
    if (!deps.secret || !deps.api) throw new ApiError('webhook_not_configured');
    const api = deps.api;
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const header = req.get('stripe-signature') ?? '';
    if (!stripeSigned(body, header, deps.secret, deps.toleranceSeconds, deps.now?.() ?? Date.now())) {
      deps.metrics.webhooks.inc({ provider: 'stripe', result: 'bad_signature' });
      if (deps.failures?.fail(req.ip ?? 'unknown')) throw new ApiError('rate_limited', 'Too many bad signatures.');
      throw new ApiError('invalid_signature');
    }
    // Signed: from here on, whatever it says is Stripe's (or our endpoint secret's holder's) word.
    const event = parseEvent(body);
    const outcome = await recordProviderEvent(
      deps,
      {
        provider: 'stripe',
        eventId: event.id,
        type: event.type,
        payload: event.payload,
      },
      async () => {
        if (event.malformed) throw new PoisonEvent('malformed_payload', event.malformed);
        if (hasUnstorableText(event.payload))
          throw new PoisonEvent('malformed_payload', 'NUL or a lone surrogate in a string');
        return effectOf(event.payload as Stripe.Event, api, deps);
      },
      { requestId: req.requestId },
    );
    // The request id is in the X-Request-Id header too, and in every log line about this delivery.
    res
      .status(200)
      .json({ received: true, duplicate: !outcome.fresh, result: outcome.result, requestId: req.requestId });
  };
}

/** The event's id and type, or why its payload is not an event (it is then stored as failed). */
function parseEvent(body: Buffer): { id: string; type: string; payload: unknown; malformed?: string } {
  const fallbackId = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return {
      id: fallbackId,
      type: 'unknown',
      payload: { raw: body.toString('utf8').slice(0, 10_000) },
      malformed: 'not JSON',
    };
  }
  const e = payload as { id?: unknown; type?: unknown; data?: { object?: unknown } } | null;
  const id = typeof e?.id === 'string' && e.id.length > 0 && e.id.length <= 255 ? e.id : undefined;
  const type = typeof e?.type === 'string' && e.type.length <= 255 ? e.type : undefined;
  if (!id || !type) return { id: id ?? fallbackId, type: type ?? 'unknown', payload, malformed: 'no event id or type' };
  if (typeof e?.data?.object !== 'object' || e.data.object === null || Array.isArray(e.data.object))
    return { id, type, payload, malformed: 'data.object is not an object' };
  return { id, type, payload };
}

async function effectOf(event: Stripe.Event, api: Stripe, deps: StripeWebhookDeps): Promise<Effect> {
  switch (event.type) {
    case 'payment_intent.succeeded':
      return paymentIntentEffect(event.data.object, api, deps, event.created);
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      // The session's PaymentIntent is the payment (its own events name the same one): one payment.
      const session = event.data.object;
      const piId = idOf(session.payment_intent);
      if (session.mode !== 'payment' || session.payment_status !== 'paid' || !piId) return IGNORED;
      const pi = await fromApi(() => api.paymentIntents.retrieve(piId));
      if (pi.status !== 'succeeded') return IGNORED;
      return paymentIntentEffect(pi, api, deps, event.created);
    }
    case 'invoice.paid': {
      // A Stripe Invoice is paid by a PaymentIntent (its InvoicePayment says which): that is the payment.
      const invoice = event.data.object;
      const payments = await fromApi(() =>
        api.invoicePayments.list({ invoice: text(invoice.id, 'id'), status: 'paid', limit: 10 }),
      );
      const piId = payments.data.map((p) => idOf(p.payment.payment_intent)).find((id) => id !== undefined);
      if (!piId) return IGNORED; // paid out of band, or by credit: no money moved through Stripe
      const pi = await fromApi(() => api.paymentIntents.retrieve(piId));
      if (pi.status !== 'succeeded') return IGNORED;
      return paymentIntentEffect(pi, api, deps, event.created);
    }
    case 'charge.succeeded':
    case 'charge.captured': {
      const charge = event.data.object;
      if (charge.captured !== true) return IGNORED; // an authorization: invoiced when captured, for what is captured
      return moneyInOf(
        api,
        deps,
        {
          id: idOf(charge.payment_intent) ?? text(charge.id, 'id'),
          paymentIntent: idOf(charge.payment_intent),
          amount: charge.amount_captured,
          currency: charge.currency,
          metadata: charge.metadata,
          customer: idOf(charge.customer),
          charge,
          email: charge.receipt_email ?? charge.billing_details?.email,
        },
        charge.description,
        stripeFormaPago(charge.payment_method_details),
        event.created,
      );
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      const refunds: Stripe.Refund[] = [];
      await fromApi(async () => {
        for await (const refund of api.refunds.list({ charge: text(charge.id, 'id'), limit: 100 }))
          refunds.push(refund);
      });
      return refundsEffect(refunds);
    }
    case 'refund.created':
    case 'refund.updated':
    case 'refund.failed':
    case 'charge.refund.updated': {
      // Events arrive in any order: what counts is the refund as it is now.
      const refund = await fromApi(() => api.refunds.retrieve(text(event.data.object.id, 'id')));
      return refundsEffect([refund]);
    }
    default:
      return IGNORED;
  }
}

/** Succeeded refunds → recorded (each with its Egreso); failed or canceled → reversed if recorded. */
function refundsEffect(refunds: readonly Stripe.Refund[]): Effect {
  const recorded: RefundFacts[] = [];
  const reversals: { provider: string; externalId: string }[] = [];
  for (const refund of refunds) {
    if (refund.status === 'succeeded') {
      const currency = text(refund.currency, 'currency').toUpperCase();
      recorded.push({
        paymentProvider: 'stripe',
        paymentExternalId: idOf(refund.payment_intent) ?? text(idOf(refund.charge), 'charge'),
        provider: 'stripe',
        externalId: text(refund.id, 'id'),
        amount: amountOf(parseMinorUnits(refund.amount, currency), currency),
        occurredAt: new Date(refund.created * 1000),
      });
    } else if (refund.status === 'failed' || refund.status === 'canceled') {
      reversals.push({ provider: 'stripe', externalId: refund.id });
    }
  }
  return { handled: recorded.length + reversals.length > 0, refunds: recorded, reversals };
}

async function paymentIntentEffect(
  pi: Stripe.PaymentIntent,
  api: Stripe,
  deps: StripeWebhookDeps,
  created: number,
): Promise<Effect> {
  const charge = await chargeOf(api, pi.latest_charge);
  return moneyInOf(
    api,
    deps,
    {
      id: text(pi.id, 'id'),
      paymentIntent: pi.id,
      amount: pi.amount_received,
      currency: pi.currency,
      metadata: pi.metadata,
      customer: idOf(pi.customer),
      charge,
      email: pi.receipt_email ?? charge?.receipt_email ?? charge?.billing_details?.email,
    },
    pi.description,
    stripeFormaPago(charge?.payment_method_details),
    created,
  );
}

async function moneyInOf(
  api: Stripe,
  deps: StripeWebhookDeps,
  source: {
    id: string;
    paymentIntent: string | undefined;
    amount: unknown;
    currency: unknown;
    metadata: Record<string, string> | null | undefined;
    customer: string | undefined;
    charge: Stripe.Charge | undefined;
    /** The receipt address (PaymentIntent, Charge) or the billing one. */
    email: string | null | undefined;
  },
  description: string | null | undefined,
  fromMethod: string | undefined,
  created: number,
): Promise<Effect> {
  const currency = text(source.currency, 'currency').toUpperCase();
  const received = moneyIn({
    provider: 'stripe',
    externalId: source.id,
    amount: amountOf(parseMinorUnits(source.amount, currency), currency),
    currency,
    occurredAt: new Date(created * 1000),
    metadata: source.metadata,
    description: typeof description === 'string' ? description : null,
    formaPago: formaPagoOf(source.metadata, fromMethod, deps.defaultFormaPago),
    email: source.email,
  });
  if (!received.payment) return { handled: true, ...received };
  const draft = await stripeSaleDraft(api, source, currency, received.payment.amount, deps.lineItems);
  return { handled: true, ...received, payment: await prepareSale(deps.sale, received.payment, draft, 'lenient') };
}
