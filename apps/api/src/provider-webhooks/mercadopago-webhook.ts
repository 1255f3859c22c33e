import type { Request, Response } from 'express';
import { MPNotFoundError, WebhookSignatureValidator } from 'mercadopago';
import type { PaymentResponse } from 'mercadopago/dist/clients/payment/commonTypes.js';
import { parseAmount } from '@timbra/cfdi-core';
import { hasUnstorableText } from '@timbra/db';
import { ApiError } from '../http/errors.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';
import type { Metrics } from '../http/metrics.ts';
import type { Ingest, WebhookDelivery } from './record-webhook.ts';
import { formaPagoOf, mercadoPagoFormaPago, moneyIn } from './money-in.ts';
import { tipoCambioText } from '../payments/exchange-rates.ts';
import { prepareSale, type LineInput, type SaleDeps, type SaleDraft } from '../payments/sale.ts';
import { PoisonEvent, recordProviderEvent } from './record-event.ts';

/** Reads a payment from Mercado Pago's API (`GET /v1/payments/{id}`, the official SDK's Payment.get). */
export type FetchMercadoPagoPayment = (id: string) => Promise<PaymentResponse>;

export interface MercadoPagoWebhookDeps {
  /** Where payments are recorded: group commit, one transaction per batch. */
  ingest: Ingest;
  /** Undefined when MERCADOPAGO_ACCESS_TOKEN is not set (the webhook is then not configured). */
  fetchPayment: FetchMercadoPagoPayment | undefined;
  secret: string | undefined;
  toleranceSeconds: number;
  defaultFormaPago: string;
  metrics: Metrics;
  /** Counts bad signatures per address (429 over the limit); a signed request is never limited by them. */
  failures?: FailureLimiter;
  /** Products, customers and exchange rates: what a sale's lines, customer and TipoCambio resolve against. */
  sale: SaleDeps;
  now?: () => number;
}

/** Payments in these statuses are money received; any other (pending, rejected, …) is not yet. */
const RECEIVED = new Set(['approved', 'partially_refunded', 'refunded']);

/**
 * POST /webhooks/mercadopago. The notification is only a trigger: its `x-signature` covers
 * `data.id`, `x-request-id` and a timestamp — not the body — so nothing is read from the body.
 * The signature is checked with the official SDK's validator (manifest
 * `id:<data.id>;request-id:<x-request-id>;ts:<ts>;`, timestamp within MERCADOPAGO_TOLERANCE_SECONDS);
 * then the payment is fetched from Mercado Pago's API with the access token, and what the API says
 * is recorded: an approved payment and its Ingreso, its approved refunds (each once, with its
 * Egreso), and refunds recorded before that are now rejected or cancelled are reversed.
 *
 * The event id is `payment:<data.id>:<x-request-id>` — signed parts only, so a replayed signature
 * with a forged body cannot claim another notification's id. Effects are idempotent (payment and
 * refund ids), so a redelivery with a new request id records nothing new.
 */
export function mercadoPagoWebhook(deps: MercadoPagoWebhookDeps) {
  return async (req: Request, res: Response) => {
    if (!deps.secret || !deps.fetchPayment) throw new ApiError('webhook_not_configured');
    const fetchPayment = deps.fetchPayment;
    const dataId = typeof req.query['data.id'] === 'string' ? req.query['data.id'] : undefined;
    const requestId = req.get('x-request-id');
    try {
      WebhookSignatureValidator.validate({
        xSignature: req.get('x-signature'),
        xRequestId: requestId,
        dataId,
        secret: deps.secret,
        toleranceSeconds: deps.toleranceSeconds,
        ...(deps.now ? { now: deps.now } : {}),
      });
    } catch {
      deps.metrics.webhooks.inc({ provider: 'mercadopago', result: 'bad_signature' });
      if (deps.failures?.fail(req.ip ?? 'unknown')) throw new ApiError('rate_limited', 'Too many bad signatures.');
      throw new ApiError('invalid_signature');
    }
    const type = typeof req.query.type === 'string' ? req.query.type : 'unknown';
    const outcome = await recordProviderEvent(
      deps,
      {
        provider: 'mercadopago',
        eventId: `${type}:${dataId ?? ''}:${requestId ?? ''}`,
        type,
        payload: req.body ?? null,
      },
      async () => {
        if (type !== 'payment' || !dataId) return { handled: false };
        if (!/^\d{1,20}$/.test(dataId)) throw new PoisonEvent('malformed_payload', 'data.id is not a payment id');
        return effectOf(await fromApi(() => fetchPayment(dataId)), dataId, deps);
      },
      { requestId: req.requestId },
    );
    // The request id is in the X-Request-Id header too, and in every log line about this delivery.
    res
      .status(200)
      .json({ received: true, duplicate: !outcome.fresh, result: outcome.result, requestId: req.requestId });
  };
}

async function effectOf(
  payment: PaymentResponse,
  dataId: string,
  deps: MercadoPagoWebhookDeps,
): Promise<Omit<WebhookDelivery, 'event'> & { handled: boolean }> {
  if (hasUnstorableText(payment)) throw new PoisonEvent('malformed_payload', 'NUL or a lone surrogate in the payment');
  if (String(payment.id) !== dataId)
    throw new PoisonEvent('malformed_payload', `the API answered payment ${String(payment.id)} for ${dataId}`);
  if (!RECEIVED.has(payment.status ?? '')) return { handled: false };
  const currency = (payment.currency_id ?? '').toUpperCase();
  const refunds = payment.refunds ?? [];
  const received = moneyIn({
    provider: 'mercadopago',
    externalId: dataId,
    amount: amountOf(payment.transaction_amount, currency),
    currency,
    occurredAt: dateOf(payment.date_approved ?? payment.date_created),
    metadata: payment.metadata as Record<string, unknown> | null | undefined,
    description: payment.description ?? null,
    formaPago: formaPagoOf(
      payment.metadata as Record<string, unknown> | undefined,
      mercadoPagoFormaPago(payment.payment_type_id),
      deps.defaultFormaPago,
    ),
    email: payment.payer?.email,
  });
  return {
    handled: true,
    ...received,
    ...(received.payment
      ? { payment: await prepareSale(deps.sale, received.payment, mercadoPagoSaleDraft(payment, currency), 'lenient') }
      : {}),
    refunds: refunds
      .filter((r) => r.status === 'approved')
      .map((refund) => ({
        paymentProvider: 'mercadopago',
        paymentExternalId: dataId,
        provider: 'mercadopago',
        externalId: String(refund.id),
        amount: amountOf(refund.amount, currency),
        occurredAt: dateOf(refund.date_created),
      })),
    reversals: refunds
      .filter((r) => r.status === 'rejected' || r.status === 'cancelled')
      .map((refund) => ({ provider: 'mercadopago', externalId: String(refund.id) })),
  };
}

/**
 * A call to Mercado Pago's API: a payment it does not have is a poison event; anything else
 * (network, 5xx, rate limit, a bad token) is answered 503, so that Mercado Pago notifies again.
 */
async function fromApi<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof MPNotFoundError)
      throw new PoisonEvent('provider_object_missing', 'the payment does not exist');
    // Never the token: only what failed.
    throw new ApiError('unavailable', `Mercado Pago's API did not answer (${(error as Error).name})`);
  }
}

function amountOf(value: unknown, currency: string): string {
  const parsed = parseAmount(value, currency);
  if (parsed.ok) return parsed.amount;
  throw new PoisonEvent(
    parsed.problem.code === 'unknown_currency' ? 'unsupported_currency' : 'invalid_amount',
    `${currency || 'no currency'}: ${parsed.problem.message}`,
  );
}

function dateOf(value: string | undefined): Date {
  const date = new Date(value ?? Number.NaN);
  if (Number.isNaN(date.getTime())) throw new PoisonEvent('malformed_payload', 'the payment has no valid date');
  return date;
}

/**
 * What Mercado Pago knows of the sale besides its money: `additional_info.items` (an item's id is a
 * product's reference when it names one of ours; its unit_price includes tax), the payer (metadata
 * `timbra_customer`, else `payer.id`), and metadata `tipo_cambio`.
 */
function mercadoPagoSaleDraft(payment: PaymentResponse, currency: string): SaleDraft {
  const metadata = (payment.metadata ?? {}) as Record<string, unknown>;
  const meta = (key: string) => (typeof metadata[key] === 'string' ? metadata[key].trim() || undefined : undefined);
  const items = payment.additional_info?.items ?? [];
  const lines: LineInput[] = items.flatMap((item) => {
    // A free item (a gift, a zero-priced line) is no concepto (CFDI40166 refuses ValorUnitario 0), as
    // Stripe's free lines; any other price that is not money reaches the line's checks as it came,
    // so the payment is recorded and its invoice waits in needs_data saying which item.
    const price = parseAmount(item.unit_price, currency);
    if (!price.ok && Number(item.unit_price) === 0) return [];
    const quantity = Number.isSafeInteger(item.quantity) && item.quantity > 0 ? item.quantity : 1;
    return [
      {
        ...(item.id ? { product: String(item.id).slice(0, 100) } : {}),
        descripcion: String(item.title || item.description || 'Producto').slice(0, 1000),
        cantidad: String(quantity),
        unitPrice: price.ok ? price.amount : String(item.unit_price),
        taxIncluded: true,
      },
    ];
  });
  const ours = meta('timbra_customer');
  const payer = payment.payer?.id ? String(payment.payer.id) : undefined;
  const given = meta('tipo_cambio') ? tipoCambioText(meta('tipo_cambio')!) : undefined;
  return {
    providerLines: true,
    ...(lines.length > 0 ? { lines } : {}),
    ...(ours ? { customer: { id: ours } } : payer ? { customer: { mercadopago: payer } } : {}),
    ...(given ? { tipoCambio: { rate: given, source: 'request' as const } } : {}),
  };
}
