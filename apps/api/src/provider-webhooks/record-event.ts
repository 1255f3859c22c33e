import type { Metrics } from '../http/metrics.ts';
import { DomainError } from '../domain-errors.ts';
import type { Ingest, WebhookDelivery } from './record-webhook.ts';

/**
 * Why a correctly signed event cannot be recorded. Stable codes: they label the metric
 * `timbra_webhook_events_failed_total` and start the stored reason (docs/webhooks.md lists them).
 */
export const POISON_REASONS = [
  'malformed_payload',
  'invalid_amount',
  'unsupported_currency',
  'provider_object_missing',
  'occurred_in_future',
  'refund_exceeds_payment',
  'refund_conflict',
  'rejected',
  'rejected_by_database',
] as const;
export type PoisonReason = (typeof POISON_REASONS)[number];

/** Thrown while reading an event: it is signed, but what it says cannot be recorded. */
export class PoisonEvent extends Error {
  constructor(
    readonly reason: PoisonReason,
    message: string,
  ) {
    super(message);
    this.name = 'PoisonEvent';
  }
}

/** A use case's refusal that no redelivery can change, as a poison reason; undefined: retry later. */
function permanentReason(error: unknown): PoisonReason | undefined {
  if (error instanceof DomainError) {
    switch (error.code) {
      case 'payment_not_found_yet': // out of order: the payment's event comes later; let the provider retry
        return undefined;
      case 'occurred_in_future':
      case 'refund_exceeds_payment':
      case 'refund_conflict':
        return error.code;
      default: // an installment the invoice does not take, and the like: said by the code in the message
        return 'rejected';
    }
  }
  // A CHECK or trigger refused the row (code 23514): the data, not the moment, is wrong.
  const text = error instanceof Error ? error.message : '';
  return /23514|check_violation|violates check constraint|refunds_within_payment/.test(text)
    ? 'rejected_by_database'
    : undefined;
}

export interface ProviderEvent {
  provider: 'stripe' | 'mercadopago';
  eventId: string;
  type: string;
  payload: unknown;
}

/** Where a delivery came from: its HTTP request's id (X-Request-Id), for the log lines about it. */
export interface DeliveryOrigin {
  requestId?: string;
}

/**
 * Records a signed event and its effect in one transaction (group commit): the first delivery of
 * an event claims it; a redelivery records nothing. `read` works out the effect (it may call the
 * provider's API). A poison event — `read` throws PoisonEvent, or the use cases refuse the effect
 * for good — is stored as `failed` with its reason, counted, and answered 2xx like any other: the
 * provider stops retrying, an operator sees it (`npm run ops -- webhooks:failed`, GET
 * /v1/webhook-events?result=failed, the TimbraWebhookEventsFailed alert). Anything else (the
 * database or the provider's API down, a refund before its payment) throws: answered 5xx/409, the
 * provider retries.
 *
 * @returns whether this delivery was the event's first, and its result.
 */
export async function recordProviderEvent(
  deps: { ingest: Ingest; metrics: Metrics },
  event: ProviderEvent,
  read: () => Promise<Omit<WebhookDelivery, 'event'> & { handled: boolean }>,
  origin: DeliveryOrigin = {},
): Promise<{ fresh: boolean; result: 'accepted' | 'ignored' | 'failed' }> {
  let failure: { reason: PoisonReason; message: string } | undefined;
  try {
    const { handled, ...effect } = await read();
    const result = handled ? 'accepted' : 'ignored';
    const fresh = await deps.ingest.submit({ event: { ...event, result }, ...effect, ...origin });
    deps.metrics.webhooks.inc({ provider: event.provider, result: fresh ? result : 'duplicate' });
    return { fresh, result };
  } catch (error) {
    if (error instanceof PoisonEvent) failure = { reason: error.reason, message: error.message };
    else {
      const reason = permanentReason(error);
      if (!reason) throw error;
      const details = error instanceof DomainError && error.details ? ` ${JSON.stringify(error.details)}` : '';
      failure = { reason, message: `${error instanceof DomainError ? error.code : 'check_violation'}${details}` };
    }
  }
  const fresh = await deps.ingest.submit({
    event: { ...event, result: 'failed', reason: `${failure.reason}: ${failure.message}`.slice(0, 2000) },
  });
  deps.metrics.webhooks.inc({ provider: event.provider, result: fresh ? 'failed' : 'duplicate' });
  if (fresh) deps.metrics.webhookEventsFailed.inc({ provider: event.provider, reason: failure.reason });
  return { fresh, result: 'failed' };
}
