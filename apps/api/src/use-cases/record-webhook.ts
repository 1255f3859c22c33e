import type { Prisma } from '@timbra/db';
import { ApiError } from '../errors.ts';

type Tx = Prisma.TransactionClient;

/** Records a webhook event; false when (provider, event id) was seen before: nothing else to do. */
export async function recordWebhookEvent(
  tx: Tx,
  event: { provider: string; eventId: string; type: string; result: 'accepted' | 'ignored'; payload: unknown },
): Promise<boolean> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO webhook_events (id, provider, event_id, type, result, payload)
    VALUES (gen_random_uuid(), ${event.provider}, ${event.eventId}, ${event.type}, ${event.result}, ${JSON.stringify(event.payload)}::jsonb)
    ON CONFLICT (provider, event_id) DO NOTHING
    RETURNING id`;
  return rows.length > 0;
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
