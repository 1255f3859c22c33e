/**
 * The providers' deliveries written in group commits (GroupCommit: many webhooks, one transaction),
 * and what an operator must hear about them: a refund's Egreso blocked, money recorded whose invoice
 * needs data, a refund reversed at the provider.
 *
 * In platform mode the batches are the deployment's, not an organization's (`webhookIngestAcross`):
 * with payments spread over many organizations, each organization's batch held one delivery.
 */
import { GroupCommit, type GroupCommitOptions, type PrismaClient } from '@timbra/db';
import type { SeveralOrganizations } from '@timbra/db/organizations';
import type { Logger } from 'pino';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import type { RecordedRefund } from '../refunds-installments/record-refund.ts';
import {
  recordDeliveries,
  recordDeliveriesOf,
  type DeliveryHooks,
  type DeliveryTo,
  type Ingest,
  type ReversedRefund,
} from './record-webhook.ts';

/** One organization's deliveries, batched together on its client. */
export function webhookIngest(
  prisma: PrismaClient,
  payments: RecordPaymentDeps,
  logger: Logger,
  options: GroupCommitOptions,
): Ingest {
  const hooks = reports(logger);
  return GroupCommit.transaction(
    prisma,
    (tx, deliveries) => recordDeliveries(tx, payments, deliveries, hooks),
    options,
  );
}

/** Every organization's deliveries, batched together: `for(deps)` is one organization's share. */
export interface IngestAcross {
  for(payments: RecordPaymentDeps): Ingest;
}

/**
 * Platform mode's ingest: the deliveries of every organization go into the same batches, each
 * batch one transaction on a session naming exactly the organizations of its deliveries
 * (`across.run`), each row written in its delivery's organization (record-webhook.ts).
 */
export function webhookIngestAcross(
  across: SeveralOrganizations,
  logger: Logger,
  options: GroupCommitOptions,
): IngestAcross {
  const hooks = reports(logger);
  const ingest = GroupCommit.transactionAcross(
    across,
    (d: DeliveryTo) => d.deps.organizationId,
    (tx, deliveries) => recordDeliveriesOf(tx, deliveries, hooks),
    options,
  );
  return { for: (deps) => ({ submit: (delivery) => ingest.submit({ deps, delivery }) }) };
}

/** What the operator hears of a batch's deliveries: the log lines that carry alerts. */
function reports(logger: Logger): DeliveryHooks {
  // A refund whose Ingreso is dead-lettered (or needs data) waits for an operator: say so.
  const reportBlocked = (refund: RecordedRefund & { requestId?: string }) => {
    if (refund.waitingFor?.blocked)
      logger.warn(
        {
          alert: 'egreso_blocked',
          requestId: refund.requestId,
          refundId: refund.refundId,
          egresoId: refund.egresoId,
          ingreso: refund.waitingFor,
        },
        "a refund's Egreso waits for an Ingreso that cannot be stamped as it is",
      );
  };
  // Money arrived, its invoice cannot be issued as it is: loud (also the worker's gauge and alert).
  const reportNeedsData = (payment: {
    paymentId: string;
    invoiceId: string | null;
    provider: string;
    externalId: string;
    requestId?: string;
    problems?: readonly { path: string; message: string }[];
  }) =>
    logger.warn(
      { alert: 'invoice_needs_data', ...payment },
      'a payment was recorded but its invoice needs data: fix it (GET /v1/invoices?status=needs_data)',
    );
  // A refund reversed at the provider: its Egreso is cancelled, or an operator must cancel it.
  const reportReversal = (reversal: ReversedRefund & { requestId?: string }) =>
    logger.warn(
      { alert: reversal.cancellationRequested ? undefined : 'reversed_refund_egreso_stands', ...reversal },
      reversal.cancellationRequested
        ? "a refund was reversed at the provider: its Egreso's cancellation is requested"
        : 'a refund was reversed at the provider and its Egreso is not stamped yet: cancel it once stamped',
    );
  return { onRefund: reportBlocked, onReversal: reportReversal, onNeedsData: reportNeedsData };
}
