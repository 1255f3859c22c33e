import { BigNumber } from 'bignumber.js';
import type { RawDb } from '@timbra/db';
import { ingresoOf, invoiceStateOf, takeFolio } from '@timbra/db/invoices';
import {
  insertRefund,
  lockPayment,
  refundByProviderId,
  refundedTotal,
  standingRefundLines,
  type LockedPayment,
} from '@timbra/db/payments';
import { lockTicket, refundOpenTicket } from '@timbra/db/tickets';
import { conceptosForSale, type SaleLine } from '@timbra/cfdi-core';
import { buildEgresoRequest, egresoTotals, type RefundedLine, type RefundFacts } from './build-egreso.ts';
import { defaultLine, type InvoiceSettings, type ReceptorInput } from '../payments/build-ingreso.ts';
import { waitingFor, writeDependentInvoice } from '../invoices/dependent-invoice.ts';
import { assertNotInFuture, DomainError } from '../domain-errors.ts';
import { saleDay, tipoCambioOn } from '../payments/exchange-rates.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';

/** A refund to record: of the payment with this id, or with this provider and external id. */
export interface RefundToRecord extends RefundFacts {
  payment: { id: string } | { provider: string; externalId: string };
}

export interface RecordedRefund {
  refundId: string;
  paymentId: string;
  /**
   * The refund's Egreso; null for a ticket refunded before its period's global (global mode): the
   * global carries less, or — refunded in full — not the ticket.
   */
  egresoId: string | null;
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
 * @throws DomainError payment_not_found_yet (409) when the payment is not known (yet);
 *   refund_conflict (409) when this refund was recorded with another payment or amount;
 *   refund_exceeds_payment (422) when the refunds would add up to more than the payment;
 *   invoice_cancelled (409) when the payment's Ingreso is cancelled or being cancelled.
 */
export async function recordRefund(
  tx: RawDb,
  deps: RecordPaymentDeps,
  refund: RefundToRecord,
): Promise<RecordedRefund> {
  assertNotInFuture('occurredAt', refund.occurredAt);
  const payment = await lockPayment(tx, refund.payment);
  if (!payment) throw new DomainError('payment_not_found_yet');
  // A ticket (global mode) is documented by its own Ingreso once self-invoiced, by its period's global
  // once issued — and by nothing yet while open: its refund then only reduces what the global carries.
  const ticket = await lockTicket(tx, { paymentId: payment.id });
  const ingreso =
    ticket?.status === 'in_global' ? await invoiceStateOf(tx, ticket.invoiceId!) : await ingresoOf(tx, payment.id);
  if (!ingreso && ticket?.status !== 'open' && ticket?.status !== 'refunded')
    throw new Error(`payment ${payment.id} has no Ingreso`);

  const existing = await refundByProviderId(tx, refund);
  if (existing) return recordedBefore(existing, payment.id, refund, ticket !== undefined, ingreso);

  if (ticket && (ticket.status === 'open' || ticket.status === 'refunded'))
    return refundOpenTicketSale(tx, payment, ticket.id, refund);
  if (!ingreso) throw new Error(`payment ${payment.id} has no Ingreso`);

  // An Egreso relates its Ingreso, which the SAT requires to be in force: a cancelled (or cancelling)
  // sale has no income CFDI to credit — the money goes back without one.
  if (ingreso.status === 'cancelled' || ingreso.status === 'cancel_requested')
    throw new DomainError('invoice_cancelled', undefined, [
      { path: 'payment', message: `its Ingreso ${ingreso.id} is ${ingreso.status}: no Egreso can relate to it` },
    ]);

  await assertRefundFits(tx, payment, refund.amount);

  const refundedPayment = await paymentAsRefunded(tx, deps, payment, refund);
  // Checked before any row or folio: lines this refund names that the payment cannot give back.
  const issuedAt = new Date();
  const built = buildEgresoRequest(refundedPayment, refund, deps.serieEgreso, 1, deps.settings, issuedAt);
  if (built.problems) throw new DomainError('validation_failed', undefined, built.problems);

  const refundId = await insertRefundOf(tx, payment.id, refund);
  const folio = await takeFolio(tx, deps.organizationId, deps.serieEgreso);
  const request = { ...built.request, folio: String(folio) };
  const egreso = await writeDependentInvoice(tx, deps, {
    kind: 'E',
    request,
    folio,
    paymentId: payment.id,
    original: ingreso,
    totals: egresoTotals(request),
    link: { refundId },
  });
  return {
    refundId,
    paymentId: payment.id,
    egresoId: egreso.id,
    created: true,
    ...(egreso.status === 'waiting' ? { waitingFor: waitingFor(ingreso) } : {}),
  };
}

/** A refund recorded before (same provider and external id): the same answer, or a conflict. */
function recordedBefore(
  existing: NonNullable<Awaited<ReturnType<typeof refundByProviderId>>>,
  paymentId: string,
  refund: RefundToRecord,
  isTicket: boolean,
  ingreso: Awaited<ReturnType<typeof ingresoOf>>,
): RecordedRefund {
  if (existing.paymentId !== paymentId || !new BigNumber(existing.amount).isEqualTo(refund.amount))
    throw new DomainError('refund_conflict');
  if (!existing.egreso) {
    if (!isTicket) throw new Error(`refund ${existing.id} has no Egreso`);
    return { refundId: existing.id, paymentId, egresoId: null, created: false };
  }
  return {
    refundId: existing.id,
    paymentId,
    egresoId: existing.egreso.id,
    created: false,
    ...(existing.egreso.status === 'waiting' && ingreso ? { waitingFor: waitingFor(ingreso) } : {}),
  };
}

/**
 * The payment as its Egreso sees it: what was sold, line by line with its gross, what earlier
 * refunds gave back of each line, and the TipoCambio of the refund's day (CFDI40118: not the sale's).
 */
async function paymentAsRefunded(tx: RawDb, deps: RecordPaymentDeps, payment: LockedPayment, refund: RefundToRecord) {
  const sold = soldLines(payment, deps.settings);
  const before = await standingRefundLines(tx, payment.id);
  const refundedByLine = sold.grosses.map((_, line) =>
    before
      .flatMap((lines) => (Array.isArray(lines) ? (lines as RefundedLine[]) : []))
      .filter((l) => l.line === line)
      .reduce((total, l) => total.plus(l.amount), new BigNumber(0))
      .toFixed(),
  );
  return {
    currency: payment.currency,
    formaPago: payment.formaPago ?? undefined,
    receptor: payment.receptor as ReceptorInput | null,
    lines: sold.lines,
    grosses: sold.grosses,
    refundedByLine,
    tipoCambio: payment.currency === 'MXN' ? payment.tipoCambio : await refundDayRate(deps, payment, refund),
  };
}

/** The refund's row, with the lines it names. */
function insertRefundOf(tx: RawDb, paymentId: string, refund: RefundToRecord): Promise<string> {
  return insertRefund(tx, {
    paymentId,
    provider: refund.provider,
    externalId: refund.externalId,
    amount: refund.amount,
    occurredAt: refund.occurredAt,
    ...(refund.lines && refund.lines.length > 0 ? { lines: refund.lines } : {}),
  });
}

/** @throws DomainError refund_exceeds_payment when the payment's refunds would add up to more than it. */
async function assertRefundFits(tx: RawDb, payment: { id: string; amount: string }, amount: string): Promise<void> {
  const refunded = await refundedTotal(tx, payment.id);
  const after = new BigNumber(refunded).plus(amount);
  if (after.isGreaterThan(payment.amount)) {
    throw new DomainError('refund_exceeds_payment', undefined, [
      {
        path: 'amount',
        message: `paid ${payment.amount}, refunded before ${new BigNumber(refunded).toFixed(2)}: at most ${new BigNumber(payment.amount).minus(refunded).toFixed(2)} more`,
      },
    ]);
  }
}

/**
 * A refund of a ticket whose period's global is not issued yet: the refund is recorded and the ticket
 * carries it (its global will carry the rest; refunded in full, the ticket goes in no document). No
 * Egreso: nothing was invoiced.
 */
async function refundOpenTicketSale(
  tx: RawDb,
  payment: { id: string; amount: string },
  ticketId: string,
  refund: RefundToRecord,
): Promise<RecordedRefund> {
  await assertRefundFits(tx, payment, refund.amount);
  const refundId = await insertRefundOf(tx, payment.id, refund);
  await refundOpenTicket(tx, ticketId, refund.amount);
  return { refundId, paymentId: payment.id, egresoId: null, created: true };
}

/**
 * The lines a payment was sold with and each one's price with tax — the default single line when it
 * named none, or when its lines cannot be invoiced as they stand (its Ingreso then needs data).
 */
function soldLines(
  payment: { lines: unknown; amount: string; currency: string },
  settings: InvoiceSettings,
): { lines: SaleLine[]; grosses: string[] } {
  const lines = Array.isArray(payment.lines) && payment.lines.length > 0 ? (payment.lines as SaleLine[]) : undefined;
  const plan = lines ? conceptosForSale(lines, payment.currency, payment.amount) : undefined;
  if (lines && plan?.ok) return { lines, grosses: plan.grosses };
  return {
    lines: [defaultLine({ amount: payment.amount, externalId: '', description: null }, settings)],
    grosses: [payment.amount],
  };
}

/**
 * The TipoCambio of a refund's Egreso in another currency: the rate of the refund's day, the caller's
 * own checked against it. A provider's refund without one keeps the sale's rate.
 *
 * @throws DomainError exchange_rate_unavailable, exchange_rate_out_of_range (a REST call), or
 *   exchange_rate_source_down.
 */
async function refundDayRate(
  deps: RecordPaymentDeps,
  payment: { currency: string; tipoCambio: string | null },
  refund: RefundToRecord,
): Promise<string | null> {
  const given = refund.tipoCambio ? { rate: refund.tipoCambio, source: 'request' } : undefined;
  const found = await tipoCambioOn(deps.rates, payment.currency, saleDay(refund.occurredAt), given);
  if ('rate' in found) return found.rate;
  if (refund.strictRate) throw new DomainError(found.code, undefined, [found.problem]);
  return payment.tipoCambio;
}
