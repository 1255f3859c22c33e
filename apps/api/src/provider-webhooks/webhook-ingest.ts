/**
 * The providers' deliveries written in group commits (GroupCommit: many webhooks, one transaction),
 * and what an operator must hear about them: a refund's Egreso blocked, money recorded whose invoice
 * needs data, a refund reversed at the provider.
 */
import { GroupCommit, type GroupCommitOptions, type PrismaClient } from '@timbra/db';
import type { Logger } from 'pino';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import type { RecordedRefund } from '../refunds-installments/record-refund.ts';
import { recordDeliveries, type ReversedRefund, type WebhookDelivery } from './record-webhook.ts';

export function webhookIngest(
  prisma: PrismaClient,
  payments: RecordPaymentDeps,
  logger: Logger,
  options: GroupCommitOptions,
) {
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
  const ingest = GroupCommit.transaction<WebhookDelivery, boolean>(
    prisma,
    (tx, deliveries: WebhookDelivery[]) =>
      recordDeliveries(tx, payments, deliveries, {
        onRefund: reportBlocked,
        onReversal: reportReversal,
        onNeedsData: reportNeedsData,
      }),
    options,
  );
  return ingest;
}
