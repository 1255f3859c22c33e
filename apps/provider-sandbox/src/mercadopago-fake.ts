/**
 * A local Mercado Pago: payments as `GET /v1/payments/{id}` shows them (typed with the official
 * SDK's PaymentResponse, so the fake cannot drift from its shapes), and the notifications Mercado
 * Pago sends on each change — which, as the real ones, carry only ids: whoever receives one must
 * fetch the payment to learn anything about it.
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { PaymentResponse } from 'mercadopago/dist/clients/payment/commonTypes.js';
import type { RefundResponse } from 'mercadopago/dist/clients/paymentRefund/commonTypes.js';
import { FakeError } from './stripe-fake.ts';

export type FakeMpRefund = Required<Pick<RefundResponse, 'id' | 'payment_id' | 'amount' | 'status' | 'date_created'>>;
export type FakeMpPayment = Required<
  Pick<
    PaymentResponse,
    | 'id'
    | 'status'
    | 'status_detail'
    | 'transaction_amount'
    | 'transaction_amount_refunded'
    | 'currency_id'
    | 'date_created'
    | 'date_approved'
    | 'date_last_updated'
    | 'payment_type_id'
    | 'payment_method_id'
    | 'description'
    | 'metadata'
    | 'live_mode'
  >
> & {
  refunds: FakeMpRefund[];
  /** What was bought (items: id, title, quantity, unit_price with tax), when the integration sent it. */
  additional_info?: Pick<NonNullable<PaymentResponse['additional_info']>, 'items'>;
  payer?: Pick<NonNullable<PaymentResponse['payer']>, 'id' | 'type' | 'email'>;
};

/** A notification as Mercado Pago POSTs it (`?data.id=…&type=payment`): ids only. */
export interface FakeMpNotification {
  id: number;
  live_mode: boolean;
  type: 'payment';
  date_created: string;
  user_id: number;
  api_version: 'v1';
  action: 'payment.created' | 'payment.updated';
  data: { id: string };
}

export const MP_PAYMENT_TYPES = [
  'credit_card',
  'debit_card',
  'prepaid_card',
  'account_money',
  'ticket',
  'bank_transfer',
  'atm',
] as const;

export interface NewMpPayment {
  /** A JSON number, as Mercado Pago sends it (e.g. 1160.5). */
  amount: number;
  currency: string;
  paymentType: (typeof MP_PAYMENT_TYPES)[number];
  status: 'approved' | 'pending' | 'rejected';
  metadata: Record<string, unknown>;
  description: string | null;
  items?: { id: string; title: string; quantity: number; unit_price: number }[] | undefined;
  /** The payer's Mercado Pago id. */
  payerId?: string | undefined;
  /** The payer's email address. */
  payerEmail?: string | undefined;
}

let nextPaymentId = 1_000_000_000 + Math.floor(Math.random() * 1_000_000);
let nextNotificationId = 100_000_000 + Math.floor(Math.random() * 1_000_000);

export class MercadoPagoFake {
  readonly payments = new Map<string, FakeMpPayment>();

  createPayment(input: NewMpPayment): { payment: FakeMpPayment; notification: FakeMpNotification } {
    const at = new Date().toISOString();
    const payment: FakeMpPayment = {
      id: nextPaymentId++,
      status: input.status,
      status_detail:
        input.status === 'approved'
          ? 'accredited'
          : input.status === 'pending'
            ? 'pending_waiting_payment'
            : 'cc_rejected_other_reason',
      transaction_amount: input.amount,
      transaction_amount_refunded: 0,
      currency_id: input.currency,
      date_created: at,
      date_approved: input.status === 'approved' ? at : (null as unknown as string),
      date_last_updated: at,
      payment_type_id: input.paymentType,
      payment_method_id:
        input.paymentType === 'ticket' ? 'oxxo' : input.paymentType === 'bank_transfer' ? 'spei' : 'visa',
      description: input.description as string,
      metadata: input.metadata,
      live_mode: false,
      refunds: [],
      ...(input.items
        ? { additional_info: { items: input.items.map((i) => ({ ...i, currency_id: input.currency })) } }
        : {}),
      ...(input.payerId || input.payerEmail
        ? {
            payer: {
              ...(input.payerId ? { id: input.payerId, type: 'customer' } : {}),
              ...(input.payerEmail ? { email: input.payerEmail } : {}),
            },
          }
        : {}),
    };
    this.payments.set(String(payment.id), payment);
    return { payment, notification: this.notification(payment, 'payment.created') };
  }

  /** A pending payment is approved (e.g. an OXXO ticket paid). */
  approve(paymentId: string): { payment: FakeMpPayment; notification: FakeMpNotification } {
    const payment = this.find(paymentId);
    Object.assign(payment, {
      status: 'approved',
      status_detail: 'accredited',
      date_approved: new Date().toISOString(),
    });
    return { payment, notification: this.notification(payment, 'payment.updated') };
  }

  refund(paymentId: string, amount: number | undefined): { refund: FakeMpRefund; notification: FakeMpNotification } {
    const payment = this.find(paymentId);
    if (payment.status !== 'approved' && payment.status !== 'partially_refunded')
      throw new FakeError(400, 'invalid_status', `a ${payment.status} payment cannot be refunded`);
    const left = Math.round((payment.transaction_amount - payment.transaction_amount_refunded) * 100) / 100;
    const take = amount ?? left;
    if (!(take > 0) || take > left) throw new FakeError(400, 'invalid_amount', 'the refund is more than what is left');
    const refund: FakeMpRefund = {
      id: nextPaymentId++,
      payment_id: payment.id,
      amount: take,
      status: 'approved',
      date_created: new Date().toISOString(),
    };
    payment.refunds.push(refund);
    payment.transaction_amount_refunded = Math.round((payment.transaction_amount_refunded + take) * 100) / 100;
    payment.status =
      payment.transaction_amount_refunded === payment.transaction_amount ? 'refunded' : 'partially_refunded';
    payment.date_last_updated = refund.date_created;
    return { refund, notification: this.notification(payment, 'payment.updated') };
  }

  find(paymentId: string): FakeMpPayment {
    const payment = this.payments.get(paymentId);
    if (!payment) throw new FakeError(404, 'not_found', `Payment not found`);
    return payment;
  }

  private notification(payment: FakeMpPayment, action: FakeMpNotification['action']): FakeMpNotification {
    return {
      id: nextNotificationId++,
      live_mode: false,
      type: 'payment',
      date_created: new Date().toISOString(),
      user_id: 123456789,
      api_version: 'v1',
      action,
      data: { id: String(payment.id) },
    };
  }
}

/**
 * Mercado Pago's `x-signature` for a notification: `ts=<unix seconds>,v1=<hex HMAC-SHA256>` of the
 * manifest `id:<data.id>;request-id:<x-request-id>;ts:<ts>;` with the application's secret.
 */
export function mercadoPagoSignature(
  dataId: string,
  requestId: string,
  secret: string,
  ts = Math.floor(Date.now() / 1000),
) {
  const manifest = `id:${dataId.toLowerCase()};request-id:${requestId};ts:${ts};`;
  return `ts=${ts},v1=${createHmac('sha256', secret).update(manifest).digest('hex')}`;
}

export const newRequestId = () => randomUUID();
