import { claimWebhookEvents, type Tx } from '@timbra/db';
import type { PaymentFacts } from './build-ingreso.ts';
import { recordPayments, type RecordPaymentDeps } from './record-payment.ts';
import { recordInstallment, type InstallmentToRecord } from './record-installment.ts';
import { recordRefund, type RecordedRefund, type RefundToRecord } from './record-refund.ts';

export interface WebhookEvent {
  provider: string;
  eventId: string;
  type: string;
  result: 'accepted' | 'ignored';
  payload: unknown;
}

/** A refund a provider reports, of the payment with that provider's id. */
export type RefundFacts = Omit<RefundToRecord, 'payment'> & { paymentProvider: string; paymentExternalId: string };

/** One webhook delivery: the event, and what it means (a payment, refunds, an installment), if anything. */
export interface WebhookDelivery {
  event: WebhookEvent;
  payment?: PaymentFacts;
  refunds?: RefundFacts[];
  /** Money received against a PPD Ingreso of ours (metadata `invoice_id`). */
  installment?: InstallmentToRecord;
}

/**
 * Records webhook deliveries set-wise in the caller's transaction: their events (a delivery whose
 * (provider, event id) was seen before — also earlier in the same batch — is a duplicate: nothing
 * else is written for it), then the payments of the new ones, then their refunds (after the
 * payments, so a refund of a payment in the same batch finds it).
 *
 * Each refund gets its Egreso (see recordRefund), each installment its Pago (see
 * recordInstallment); `onRefund` hears of each refund recorded.
 *
 * @returns per delivery, in order: true when its event was new.
 * @throws DomainError payment_not_found_yet when a refund's payment is not known yet, or another of
 *   recordRefund's errors.
 */
export async function recordDeliveries(
  tx: Tx,
  deps: RecordPaymentDeps,
  deliveries: readonly WebhookDelivery[],
  onRefund?: (refund: RecordedRefund) => void,
): Promise<boolean[]> {
  const events = deliveries.map((d) => d.event);
  // The first delivery of an event claims it; a second one (before, or in the same batch) is a duplicate.
  const fresh = await claimWebhookEvents(tx, events);

  const payments = deliveries.flatMap((d, i) => (fresh[i] && d.payment ? [{ facts: d.payment }] : []));
  await recordPayments(tx, deps, payments);
  for (const [i, d] of deliveries.entries()) {
    if (!fresh[i]) continue;
    for (const { paymentProvider, paymentExternalId, ...refund } of d.refunds ?? []) {
      const recorded = await recordRefund(tx, deps, {
        ...refund,
        payment: { provider: paymentProvider, externalId: paymentExternalId },
      });
      onRefund?.(recorded);
    }
    if (d.installment) await recordInstallment(tx, deps, d.installment);
  }
  return fresh;
}
