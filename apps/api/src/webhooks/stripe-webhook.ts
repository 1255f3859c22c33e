import type { Request, Response } from 'express';
import Stripe from 'stripe';
import { ApiError } from '../errors.ts';
import type { Metrics } from '../http/metrics.ts';
import type { GroupCommit } from '../use-cases/group-commit.ts';
import type { WebhookDelivery } from '../use-cases/record-webhook.ts';
import { fromMinorUnits } from './amounts.ts';
import { moneyIn } from './money-in.ts';

export interface StripeWebhookDeps {
  /** Where payments are recorded: group commit, one transaction per batch. */
  ingest: GroupCommit<WebhookDelivery, boolean>;
  secret: string | undefined;
  toleranceSeconds: number;
  defaultFormaPago: string;
  metrics: Metrics;
}

// Only used for signature checks (no API calls): the key is never sent anywhere.
const stripe = new Stripe('sk_timbra_signature_checks_only');

/**
 * POST /webhooks/stripe. Verifies `Stripe-Signature` on the raw body (HMAC-SHA256, timestamp
 * tolerance) with the official library; records the event and its effect in one transaction; 2xx
 * only after commit. payment_intent.succeeded / charge.succeeded → payment + Ingreso;
 * charge.refunded → refunds; anything else → recorded as ignored.
 */
export function stripeWebhook(deps: StripeWebhookDeps) {
  return async (req: Request, res: Response) => {
    if (!deps.secret) throw new ApiError('webhook_not_configured');
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(
        req.body as Buffer,
        req.get('stripe-signature') ?? '',
        deps.secret,
        deps.toleranceSeconds,
      );
    } catch {
      deps.metrics.webhooks.inc({ provider: 'stripe', result: 'bad_signature' });
      throw new ApiError('invalid_signature');
    }
    const handled = ['payment_intent.succeeded', 'charge.succeeded', 'charge.refunded'].includes(event.type);
    const fresh = await deps.ingest.submit({
      event: {
        provider: 'stripe',
        eventId: event.id,
        type: event.type,
        result: handled ? 'accepted' : 'ignored',
        payload: event,
      },
      ...effectOf(event, deps.defaultFormaPago),
    });
    deps.metrics.webhooks.inc({ provider: 'stripe', result: !fresh ? 'duplicate' : handled ? 'accepted' : 'ignored' });
    res.status(200).json({ received: true, duplicate: !fresh });
  };
}

/** What a Stripe event means for us: a payment, refunds, or nothing. */
function effectOf(event: Stripe.Event, defaultFormaPago: string): Omit<WebhookDelivery, 'event'> {
  const occurredAt = new Date(event.created * 1000);
  if (event.type === 'payment_intent.succeeded') {
    const pi = event.data.object;
    return moneyInOf(pi.id, pi.amount_received || pi.amount, pi.currency, pi.metadata, pi.description, occurredAt, {
      formaPago: defaultFormaPago,
    });
  }
  if (event.type === 'charge.succeeded') {
    const charge = event.data.object;
    // The PaymentIntent's id when there is one: both events then name the same payment.
    return moneyInOf(
      idOf(charge.payment_intent) ?? charge.id,
      charge.amount_captured || charge.amount,
      charge.currency,
      charge.metadata,
      charge.description,
      occurredAt,
      { formaPago: charge.payment_method_details?.card?.funding === 'debit' ? '28' : defaultFormaPago },
    );
  }
  if (event.type === 'charge.refunded') {
    const charge = event.data.object;
    const currency = charge.currency.toUpperCase();
    return {
      refunds: (charge.refunds?.data ?? []).map((refund) => ({
        paymentProvider: 'stripe',
        paymentExternalId: idOf(charge.payment_intent) ?? charge.id,
        provider: 'stripe',
        externalId: refund.id,
        amount: fromMinorUnits(refund.amount, currency),
        occurredAt: new Date(refund.created * 1000),
      })),
    };
  }
  return {};
}

/** A PaymentIntent or a Charge that succeeded: money in (see moneyIn). */
function moneyInOf(
  externalId: string,
  minorUnits: number,
  rawCurrency: string,
  metadata: Record<string, string> | null | undefined,
  description: string | null | undefined,
  occurredAt: Date,
  fallback: { formaPago: string },
): Omit<WebhookDelivery, 'event'> {
  const currency = rawCurrency.toUpperCase();
  return moneyIn({
    provider: 'stripe',
    externalId,
    amount: fromMinorUnits(minorUnits, currency),
    currency,
    occurredAt,
    metadata,
    description,
    formaPago: formaPagoOf(metadata, fallback.formaPago),
  });
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (!value) return undefined;
  return typeof value === 'string' ? value : value.id;
}

function formaPagoOf(metadata: Record<string, string> | null | undefined, fallback: string): string {
  const value = metadata?.forma_pago?.trim();
  return value && /^\d{2}$/.test(value) ? value : fallback;
}
