import type { RawDb } from '@timbra/db';
import { narrowedTo } from '@timbra/db/organizations';
import { reverseRefund } from '@timbra/db/payments';
import { claimWebhookEvents, type ReceivedEvent } from '@timbra/db/webhook-events';
import type { PaymentFacts } from '../payments/build-ingreso.ts';
import { recordPaymentsOf, type RecordedPayment, type RecordPaymentDeps } from '../payments/record-payment.ts';
import { recordInstallment, type InstallmentToRecord } from '../refunds-installments/record-installment.ts';
import { recordRefund, type RecordedRefund, type RefundToRecord } from '../refunds-installments/record-refund.ts';
import { requestCancellation } from '../invoices/request-cancellation.ts';

export type WebhookEvent = ReceivedEvent;

/** A refund the provider now says failed or was canceled, after it had succeeded. */
export interface RefundReversal {
  provider: string;
  externalId: string;
}

/** What became of a reversed refund's Egreso. */
export interface ReversedRefund {
  refundId: string;
  egreso: { id: string; status: string } | undefined;
  /** True when its Egreso was stamped and its cancellation (motivo 02) is now requested. */
  cancellationRequested: boolean;
}

export interface DeliveryHooks {
  /** A payment whose Ingreso could not be frozen (needs_data): the money arrived, the invoice waits for a person. */
  onNeedsData?: (payment: RecordedPayment & { provider: string; externalId: string; requestId?: string }) => void;
  onRefund?: (refund: RecordedRefund & { requestId?: string }) => void;
  onReversal?: (reversal: ReversedRefund & { requestId?: string }) => void;
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
  /** Refunds recorded before that the provider now reports failed or canceled. */
  reversals?: RefundReversal[];
  /** The HTTP request that brought it (X-Request-Id): in every log line about what it recorded. */
  requestId?: string;
}

/** What records a delivery: a group commit (webhook-ingest.ts) answering whether its event was new. */
export interface Ingest {
  submit(delivery: WebhookDelivery): Promise<boolean>;
}

/** A delivery to an organization, with that organization's dependencies. */
export interface DeliveryTo {
  deps: RecordPaymentDeps;
  delivery: WebhookDelivery;
}

/**
 * Records webhook deliveries set-wise in the caller's transaction: their events (a delivery whose
 * (provider, event id) was seen before — also earlier in the same batch — is a duplicate: nothing
 * else is written for it), then the payments of the new ones, then their refunds (after the
 * payments, so a refund of a payment in the same batch finds it).
 *
 * Each refund gets its Egreso (see recordRefund), each installment its Pago (see
 * recordInstallment). A reversal (see reverseRefundOf) marks the refund reversed and, when its
 * Egreso is stamped, requests that Egreso's cancellation. `hooks` hear of each refund and reversal.
 *
 * @returns per delivery, in order: true when its event was new.
 * @throws DomainError payment_not_found_yet when a refund's payment is not known yet, or another of
 *   recordRefund's errors.
 */
export function recordDeliveries(
  tx: RawDb,
  deps: RecordPaymentDeps,
  deliveries: readonly WebhookDelivery[],
  hooks: DeliveryHooks = {},
): Promise<boolean[]> {
  return recordDeliveriesOf(
    tx,
    deliveries.map((delivery) => ({ deps, delivery })),
    hooks,
  );
}

/**
 * `recordDeliveries` for deliveries to several organizations, in a transaction whose session names
 * them all (`OrganizationClients.across()`): the events and payments set-wise, each row in its own
 * organization; a delivery's refunds, installment and reversals in the transaction narrowed to its
 * organization (rare beside payments, and written by use cases that rely on the session's).
 */
export async function recordDeliveriesOf(
  tx: RawDb,
  deliveries: readonly DeliveryTo[],
  hooks: DeliveryHooks = {},
): Promise<boolean[]> {
  const several = new Set(deliveries.map((d) => d.deps.organizationId)).size > 1;
  const events = deliveries.map(({ deps, delivery }) => ({ ...delivery.event, organizationId: deps.organizationId }));
  // The first delivery of an event claims it; a second one (before, or in the same batch) is a duplicate.
  const fresh = await claimWebhookEvents(tx, events);

  const payments = deliveries.flatMap(({ deps, delivery: d }, i) =>
    fresh[i] && d.payment ? [{ facts: d.payment, deps, requestId: d.requestId }] : [],
  );
  const recordedPayments = await recordPaymentsOf(tx, payments, several);
  recordedPayments.forEach((recorded, i) => {
    const { facts, requestId } = payments[i]!;
    if (recorded.problems)
      hooks.onNeedsData?.({ ...recorded, provider: facts.provider, externalId: facts.externalId, requestId });
  });
  for (const [i, { deps, delivery }] of deliveries.entries()) {
    if (!fresh[i] || !(delivery.refunds?.length || delivery.installment || delivery.reversals?.length)) continue;
    const record = () => recordConsequences(tx, deps, delivery, hooks);
    await (several ? narrowedTo(tx, deps.organizationId, record) : record());
  }
  return fresh;
}

/** A new delivery's refunds, installment and reversals, recorded in the session's organization. */
async function recordConsequences(
  tx: RawDb,
  deps: RecordPaymentDeps,
  d: WebhookDelivery,
  hooks: DeliveryHooks,
): Promise<void> {
  for (const { paymentProvider, paymentExternalId, ...refund } of d.refunds ?? []) {
    const recorded = await recordRefund(tx, deps, {
      ...refund,
      payment: { provider: paymentProvider, externalId: paymentExternalId },
    });
    hooks.onRefund?.({ ...recorded, requestId: d.requestId });
  }
  if (d.installment) await recordInstallment(tx, deps, d.installment);
  for (const reversal of d.reversals ?? []) {
    const reversed = await reverseRefundOf(tx, reversal);
    if (reversed) hooks.onReversal?.({ ...reversed, requestId: d.requestId });
  }
}

/**
 * A refund that succeeded (and got its Egreso) and then failed or was canceled at the provider: the
 * money did not go back, so the Egreso must not stand. The refund is marked `reversed` (it no longer
 * counts against the payment); its Egreso, if stamped, gets a cancellation request with motivo 02
 * (comprobante emitido con errores sin relación) — the worker carries it to the PAC like any other.
 * An Egreso not stamped yet (waiting, pending, stamp_failed) is left to an operator, who cancels it
 * once stamped: the worker's gauge `timbra_reversed_refunds_standing` counts them and alerts.
 * @returns undefined when the refund is unknown (it never succeeded here) or was reversed before.
 */
async function reverseRefundOf(tx: RawDb, reversal: RefundReversal): Promise<ReversedRefund | undefined> {
  const reversed = await reverseRefund(tx, reversal);
  if (!reversed) return undefined;
  const stamped = reversed.egreso?.status === 'stamped';
  if (stamped) await requestCancellation(tx, { invoiceId: reversed.egreso!.id, motivo: '02' });
  return { refundId: reversed.id, egreso: reversed.egreso, cancellationRequested: stamped };
}
