import type { Prisma } from '@timbra/db';
import { ApiError } from '../errors.ts';
import type { PaymentFacts } from './build-ingreso.ts';
import { recordPayments, type RecordPaymentDeps } from './record-payment.ts';

type Tx = Prisma.TransactionClient;

export interface WebhookEvent {
  provider: string;
  eventId: string;
  type: string;
  result: 'accepted' | 'ignored';
  payload: unknown;
}

export type RefundFacts = Parameters<typeof recordRefund>[1];

/** One webhook delivery: the event, and what it means (a payment, refunds), if anything. */
export interface WebhookDelivery {
  event: WebhookEvent;
  payment?: PaymentFacts;
  refunds?: RefundFacts[];
}

/**
 * Records webhook deliveries set-wise in the caller's transaction: their events (a delivery whose
 * (provider, event id) was seen before — also earlier in the same batch — is a duplicate: nothing
 * else is written for it), then the payments of the new ones, then their refunds (after the
 * payments, so a refund of a payment in the same batch finds it).
 *
 * @returns per delivery, in order: true when its event was new.
 * @throws ApiError payment_not_found_yet when a refund's payment is not known yet.
 */
export async function recordDeliveries(
  tx: Tx,
  deps: RecordPaymentDeps,
  deliveries: readonly WebhookDelivery[],
): Promise<boolean[]> {
  const events = deliveries.map((d) => d.event);
  const inserted = await tx.$queryRaw<{ provider: string; event_id: string }[]>`
    INSERT INTO webhook_events (id, provider, event_id, type, result, payload)
    SELECT gen_random_uuid(), provider, event_id, type, result, payload
    FROM unnest(${events.map((e) => e.provider)}::text[], ${events.map((e) => e.eventId)}::text[],
                ${events.map((e) => e.type)}::text[], ${events.map((e) => e.result)}::text[],
                ${events.map((e) => JSON.stringify(e.payload))}::jsonb[]) WITH ORDINALITY
         AS e(provider, event_id, type, result, payload, ord)
    ORDER BY ord
    ON CONFLICT (provider, event_id) DO NOTHING
    RETURNING provider, event_id`;
  const unclaimed = new Set(inserted.map((e) => `${e.provider}\u0000${e.event_id}`));
  // The first delivery of an event claims it; a second one in the same batch is a duplicate.
  const fresh = events.map((e) => unclaimed.delete(`${e.provider}\u0000${e.eventId}`));

  const payments = deliveries.flatMap((d, i) => (fresh[i] && d.payment ? [{ facts: d.payment }] : []));
  await recordPayments(tx, deps, payments);
  for (const [i, d] of deliveries.entries()) {
    if (!fresh[i]) continue;
    for (const refund of d.refunds ?? []) await recordRefund(tx, refund);
  }
  return fresh;
}

/**
 * Records a refund of a known payment (its Egreso is stamped by the lifecycle flow). A refund whose
 * payment we do not know yet (out-of-order delivery) is refused with 409, so the provider redelivers
 * it later instead of us acknowledging something we did not store.
 */
export async function recordRefund(
  tx: Tx,
  refund: {
    paymentProvider: string;
    paymentExternalId: string;
    provider: string;
    externalId: string;
    amount: string;
    occurredAt: Date;
  },
): Promise<void> {
  const payment = await tx.payment.findUnique({
    where: { provider_externalId: { provider: refund.paymentProvider, externalId: refund.paymentExternalId } },
    select: { id: true },
  });
  if (!payment) throw new ApiError('payment_not_found_yet');
  await tx.$executeRaw`
    INSERT INTO refunds (id, payment_id, provider, external_id, amount, occurred_at)
    VALUES (gen_random_uuid(), ${payment.id}::uuid, ${refund.provider}, ${refund.externalId}, ${refund.amount}::numeric, ${refund.occurredAt})
    ON CONFLICT (provider, external_id) DO NOTHING`;
}
