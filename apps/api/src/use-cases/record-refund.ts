import { BigNumber } from 'bignumber.js';
import {
  CfdiError,
  CfdiValidationError,
  freezeComprobante,
  stampKeyFor,
  withRelatedUuid,
  type FrozenCfdi,
} from '@timbra/cfdi-core';
import type { Prisma } from '@timbra/db';
import { ApiError } from '../errors.ts';
import { buildEgresoRequest, egresoTotals, type RefundFacts } from './build-egreso.ts';
import type { ReceptorInput } from './build-ingreso.ts';
import { OUTBOX_CHANNEL, type RecordPaymentDeps } from './record-payment.ts';

type Tx = Prisma.TransactionClient;

/** A refund to record: of the payment with this id, or with this provider and external id. */
export interface RefundToRecord extends RefundFacts {
  payment: { id: string } | { provider: string; externalId: string };
}

export interface RecordedRefund {
  refundId: string;
  paymentId: string;
  egresoId: string;
  /** False when this refund (same provider and external id) was recorded before. */
  created: boolean;
  /**
   * Set while the Egreso waits for its Ingreso: `blocked` when the Ingreso cannot be stamped as it
   * is (dead-lettered, or its data incomplete) — an operator must act on the Ingreso first.
   */
  waitingFor?: { invoiceId: string; status: string; blocked: boolean };
}

/**
 * Records a refund and its Egreso in the caller's transaction. The payment's row is locked first, so
 * refunds of one payment are recorded one at a time and their sum never exceeds what was paid. The
 * Egreso takes the next folio of the Egreso serie (gapless: same transaction). If the Ingreso is
 * stamped, the Egreso is frozen now — related to its UUID — with its outbox row; otherwise it waits
 * (status `waiting`, its request stored) and the worker freezes it when the Ingreso is stamped.
 *
 * @throws ApiError payment_not_found_yet (409) when the payment is not known (yet);
 *   refund_conflict (409) when this refund was recorded with another payment or amount;
 *   refund_exceeds_payment (422) when the refunds would add up to more than the payment.
 */
export async function recordRefund(tx: Tx, deps: RecordPaymentDeps, refund: RefundToRecord): Promise<RecordedRefund> {
  const where = refund.payment;
  const [payment] =
    'id' in where
      ? await tx.$queryRaw<PaymentRow[]>`
          SELECT id, amount::text, currency, receptor, forma_pago FROM payments WHERE id = ${where.id}::uuid FOR UPDATE`
      : await tx.$queryRaw<PaymentRow[]>`
          SELECT id, amount::text, currency, receptor, forma_pago FROM payments
          WHERE provider = ${where.provider} AND external_id = ${where.externalId} FOR UPDATE`;
  if (!payment) throw new ApiError('payment_not_found_yet');
  const [ingreso] = await tx.$queryRaw<{ id: string; status: string; uuid: string | null }[]>`
    SELECT id, status, uuid FROM invoices WHERE payment_id = ${payment.id}::uuid AND kind = 'I'`;
  if (!ingreso) throw new Error(`payment ${payment.id} has no Ingreso`);
  const waitingFor = {
    invoiceId: ingreso.id,
    status: ingreso.status,
    blocked: ingreso.status === 'stamp_failed' || ingreso.status === 'needs_data',
  };

  const existing = await tx.refund.findUnique({
    where: { provider_externalId: { provider: refund.provider, externalId: refund.externalId } },
    include: { egreso: { select: { id: true, status: true } } },
  });
  if (existing) {
    if (existing.paymentId !== payment.id || !existing.amount.equals(refund.amount))
      throw new ApiError('refund_conflict');
    if (!existing.egreso) throw new Error(`refund ${existing.id} has no Egreso`);
    return {
      refundId: existing.id,
      paymentId: payment.id,
      egresoId: existing.egreso.id,
      created: false,
      ...(existing.egreso.status === 'waiting' ? { waitingFor } : {}),
    };
  }

  const [{ refunded }] = (await tx.$queryRaw<{ refunded: string }[]>`
    SELECT COALESCE(sum(amount), 0)::text AS refunded FROM refunds WHERE payment_id = ${payment.id}::uuid`) as [
    { refunded: string },
  ];
  const after = new BigNumber(refunded).plus(refund.amount);
  if (after.isGreaterThan(payment.amount)) {
    throw new ApiError('refund_exceeds_payment', undefined, [
      {
        path: 'amount',
        message: `paid ${payment.amount}, refunded before ${new BigNumber(refunded).toFixed(2)}: at most ${new BigNumber(payment.amount).minus(refunded).toFixed(2)} more`,
      },
    ]);
  }

  const [inserted] = (await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO refunds (id, payment_id, provider, external_id, amount, occurred_at)
    VALUES (gen_random_uuid(), ${payment.id}::uuid, ${refund.provider}, ${refund.externalId}, ${refund.amount}::numeric, ${refund.occurredAt})
    RETURNING id`) as [{ id: string }];
  const [counter] = await tx.$queryRaw<{ folio: number }[]>`
    UPDATE series SET next_folio = next_folio + 1
    WHERE emisor_id = ${deps.emisorId}::uuid AND serie = ${deps.serieEgreso}
    RETURNING next_folio - 1 AS folio`;
  if (!counter) throw new Error(`serie ${deps.serieEgreso} is not configured`);

  const request = buildEgresoRequest(
    { currency: payment.currency, formaPago: payment.forma_pago ?? undefined, receptor: payment.receptor },
    refund,
    deps.serieEgreso,
    counter.folio,
    deps.settings,
  );
  const stampKey = stampKeyFor(deps.settings.emisor.rfc, 'E', request.sourceId);
  const stamped = ingreso.status === 'stamped' && ingreso.uuid !== null;
  let frozen: FrozenCfdi | undefined;
  let problems: { path: string; message: string }[] | null = null;
  if (stamped) {
    try {
      frozen = freezeComprobante(withRelatedUuid(request, ingreso.uuid!), deps.csd);
    } catch (error) {
      if (error instanceof CfdiValidationError) problems = [...error.issues];
      else if (error instanceof CfdiError) problems = [{ path: 'csd', message: `${error.code}: ${error.message}` }];
      else throw error;
    }
  }
  const status = frozen ? 'pending' : stamped ? 'needs_data' : 'waiting';
  const totals = frozen
    ? { subTotal: frozen.subTotal, total: frozen.total }
    : egresoTotals(refund.amount, deps.settings.ivaTasa);
  const [egreso] = (await tx.$queryRaw<{ id: string }[]>`
    WITH invoice AS (
      INSERT INTO invoices (id, emisor_id, payment_id, refund_id, related_invoice_id, kind, serie, folio, fecha, moneda,
                            sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original, request)
      VALUES (gen_random_uuid(), ${deps.emisorId}::uuid, ${payment.id}::uuid, ${inserted.id}::uuid, ${ingreso.id}::uuid, 'E',
              ${deps.serieEgreso}, ${counter.folio}, ${frozen?.fecha ?? null}, ${payment.currency},
              ${totals.subTotal}::numeric, ${totals.total}::numeric, ${status},
              ${problems ? JSON.stringify(problems) : null}::jsonb, ${stampKey}, ${frozen?.xml ?? null},
              ${frozen?.cadenaOriginal ?? null}, ${frozen ? null : JSON.stringify(request)}::jsonb)
      RETURNING id, stamp_key, status
    ), outbox AS (
      INSERT INTO outbox (id, kind, invoice_id, stamp_key)
      SELECT gen_random_uuid(), 'stamp', id, stamp_key FROM invoice WHERE status = 'pending'
      RETURNING id
    )
    SELECT invoice.id, (SELECT count(pg_notify(${OUTBOX_CHANNEL}, outbox.id::text)) FROM outbox) AS notified
    FROM invoice`) as [{ id: string }];

  return {
    refundId: inserted.id,
    paymentId: payment.id,
    egresoId: egreso.id,
    created: true,
    ...(stamped ? {} : { waitingFor }),
  };
}

interface PaymentRow {
  id: string;
  amount: string;
  currency: string;
  receptor: ReceptorInput | null;
  forma_pago: string | null;
}
