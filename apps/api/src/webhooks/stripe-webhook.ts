import type { Request, Response } from 'express';
import Stripe from 'stripe';
import type { PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';
import type { Metrics } from '../http/metrics.ts';
import { recordPayment, type RecordPaymentDeps } from '../use-cases/record-payment.ts';
import { recordRefund, recordWebhookEvent } from '../use-cases/record-webhook.ts';
import { fromMinorUnits } from './amounts.ts';
import { receptorFromMetadata } from './receptor.ts';

export interface StripeWebhookDeps {
  prisma: PrismaClient;
  payments: RecordPaymentDeps;
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
    const fresh = await deps.prisma.$transaction(
      async (tx) => {
        const isNew = await recordWebhookEvent(tx, {
          provider: 'stripe',
          eventId: event.id,
          type: event.type,
          result: handled ? 'accepted' : 'ignored',
          payload: event,
        });
        if (!isNew || !handled) return isNew;
        const occurredAt = new Date(event.created * 1000);
        if (event.type === 'payment_intent.succeeded') {
          const pi = event.data.object;
          const currency = pi.currency.toUpperCase();
          await recordPayment(tx, deps.payments, {
            provider: 'stripe',
            externalId: pi.id,
            amount: fromMinorUnits(pi.amount_received || pi.amount, currency),
            currency,
            occurredAt,
            receptor: receptorFromMetadata(pi.metadata),
            description: pi.description ?? null,
            formaPago: formaPagoOf(pi.metadata, deps.defaultFormaPago),
          });
        } else if (event.type === 'charge.succeeded') {
          const charge = event.data.object;
          const currency = charge.currency.toUpperCase();
          await recordPayment(tx, deps.payments, {
            // The PaymentIntent's id when there is one: both events then name the same payment.
            provider: 'stripe',
            externalId: idOf(charge.payment_intent) ?? charge.id,
            amount: fromMinorUnits(charge.amount_captured || charge.amount, currency),
            currency,
            occurredAt,
            receptor: receptorFromMetadata(charge.metadata),
            description: charge.description ?? null,
            formaPago: formaPagoOf(
              charge.metadata,
              charge.payment_method_details?.card?.funding === 'debit' ? '28' : deps.defaultFormaPago,
            ),
          });
        } else {
          const charge = event.data.object as Stripe.Charge;
          const currency = charge.currency.toUpperCase();
          const refunds = charge.refunds?.data ?? [];
          for (const refund of refunds) {
            await recordRefund(tx, {
              paymentProvider: 'stripe',
              paymentExternalId: idOf(charge.payment_intent) ?? charge.id,
              provider: 'stripe',
              externalId: refund.id,
              amount: fromMinorUnits(refund.amount, currency),
              occurredAt: new Date(refund.created * 1000),
            });
          }
        }
        return true;
      },
      { maxWait: 10_000, timeout: 20_000 },
    );
    deps.metrics.webhooks.inc({ provider: 'stripe', result: !fresh ? 'duplicate' : handled ? 'accepted' : 'ignored' });
    res.status(200).json({ received: true, duplicate: !fresh });
  };
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (!value) return undefined;
  return typeof value === 'string' ? value : value.id;
}

function formaPagoOf(metadata: Record<string, string> | null | undefined, fallback: string): string {
  const value = metadata?.forma_pago?.trim();
  return value && /^\d{2}$/.test(value) ? value : fallback;
}
