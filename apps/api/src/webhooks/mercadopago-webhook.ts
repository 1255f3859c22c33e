import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { ApiError } from '../errors.ts';
import type { Metrics } from '../http/metrics.ts';
import type { GroupCommit } from '../use-cases/group-commit.ts';
import type { WebhookDelivery } from '../use-cases/record-webhook.ts';
import { fromDecimalNumber } from './amounts.ts';
import { moneyIn } from './money-in.ts';

/** The fields of a Mercado Pago payment Timbra uses (GET /v1/payments/{id}). */
export interface MercadoPagoPayment {
  id: string | number;
  status: string;
  transaction_amount: number | string;
  currency_id: string;
  date_approved?: string | null;
  date_created?: string;
  payment_type_id?: string;
  description?: string | null;
  metadata?: Record<string, unknown> | null;
  refunds?: { id: string | number; amount: number | string; date_created: string }[];
}

/** Where payment details come from: the notification itself (sandbox, tests) or Mercado Pago's API. */
export interface MercadoPagoPayments {
  get(id: string, notification: unknown): Promise<MercadoPagoPayment>;
}

/** Test and sandbox setups: the notification's `data` carries the payment. */
export const paymentsFromNotification: MercadoPagoPayments = {
  get: (id, notification) => {
    const data = (notification as { data?: MercadoPagoPayment } | null)?.data;
    if (!data || String(data.id) !== id || typeof data.status !== 'string') {
      return Promise.reject(
        new ApiError('validation_failed', 'the notification does not carry the payment', [
          { path: 'data', message: 'missing payment fields' },
        ]),
      );
    }
    return Promise.resolve(data);
  },
};

/**
 * Production: `GET {apiUrl}/v1/payments/{id}` with the access token (10 s a try; a network failure
 * or a 5xx/429 is tried twice more).
 */
export function paymentsFromApi(apiUrl: string, accessToken: string): MercadoPagoPayments {
  const url = (id: string) => `${apiUrl.replace(/\/$/, '')}/v1/payments/${encodeURIComponent(id)}`;
  return {
    get: async (id) => {
      let failure = 'error';
      for (let attempt = 1; attempt <= 3; attempt++) {
        try {
          const response = await fetch(url(id), {
            headers: { authorization: `Bearer ${accessToken}` },
            signal: AbortSignal.timeout(10_000),
          });
          if (response.ok) return (await response.json()) as MercadoPagoPayment;
          failure = `HTTP ${response.status}`;
          if (response.status < 500 && response.status !== 429) break;
        } catch (error) {
          failure = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
        }
      }
      // Never the token: only what failed.
      throw new ApiError('unavailable', `Mercado Pago payment ${id} could not be fetched (${failure})`);
    },
  };
}

const FORMA_PAGO: Readonly<Record<string, string>> = {
  credit_card: '04',
  debit_card: '28',
  prepaid_card: '28',
  account_money: '05',
  bank_transfer: '03',
  ticket: '01',
  atm: '01',
};

export interface MercadoPagoWebhookDeps {
  /** Where payments are recorded: group commit, one transaction per batch. */
  ingest: GroupCommit<WebhookDelivery, boolean>;
  source: MercadoPagoPayments;
  secret: string | undefined;
  toleranceSeconds: number;
  defaultFormaPago: string;
  metrics: Metrics;
  now?: () => number;
}

/**
 * Checks `x-signature` (`ts=…,v1=…`): v1 must be HMAC-SHA256(secret) of the manifest
 * `id:<data.id>;request-id:<x-request-id>;ts:<ts>;` (parts without a value are left out, and an
 * alphanumeric data.id is lowercased, as Mercado Pago builds it), and ts within the tolerance.
 */
export function verifyMercadoPagoSignature(
  header: string | undefined,
  requestId: string | undefined,
  dataId: string | undefined,
  secret: string,
  toleranceSeconds: number,
  nowMs: number,
): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(
    header.split(',').map((p) => {
      const [k, ...v] = p.trim().split('=');
      return [k ?? '', v.join('=')];
    }),
  );
  const ts = parts.ts;
  const v1 = parts.v1;
  if (!ts || !v1 || !/^\d+$/.test(ts) || !/^[0-9a-f]{64}$/i.test(v1)) return false;
  // Mercado Pago's ts is in seconds in its docs and milliseconds in some deliveries: accept both.
  const tsMs = ts.length > 11 ? Number(ts) : Number(ts) * 1000;
  if (Math.abs(nowMs - tsMs) > toleranceSeconds * 1000) return false;
  const id = dataId && /^[a-z0-9]+$/i.test(dataId) ? dataId.toLowerCase() : dataId;
  const manifest = `${id ? `id:${id};` : ''}${requestId ? `request-id:${requestId};` : ''}ts:${ts};`;
  const expected = createHmac('sha256', secret).update(manifest).digest();
  const given = Buffer.from(v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * POST /webhooks/mercadopago. Verifies the signature, records the notification (dedupe on its id)
 * and, for an approved payment, the payment and its Ingreso; refunds listed on the payment are
 * recorded. One transaction; 2xx only after commit.
 */
export function mercadoPagoWebhook(deps: MercadoPagoWebhookDeps) {
  return async (req: Request, res: Response) => {
    if (!deps.secret) throw new ApiError('webhook_not_configured');
    const body = (req.body ?? {}) as { id?: unknown; type?: unknown; action?: unknown; data?: { id?: unknown } };
    const scalar = (v: unknown): string | undefined =>
      typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
    const queryId = typeof req.query['data.id'] === 'string' ? req.query['data.id'] : undefined;
    const dataId = queryId ?? scalar(body.data?.id);
    const now = deps.now?.() ?? Date.now();
    if (
      !verifyMercadoPagoSignature(
        req.get('x-signature'),
        req.get('x-request-id'),
        dataId,
        deps.secret,
        deps.toleranceSeconds,
        now,
      )
    ) {
      deps.metrics.webhooks.inc({ provider: 'mercadopago', result: 'bad_signature' });
      throw new ApiError('invalid_signature');
    }
    const type =
      typeof body.type === 'string' ? body.type : typeof req.query.type === 'string' ? req.query.type : 'unknown';
    const eventId = scalar(body.id) ?? `${type}:${dataId ?? ''}:${req.get('x-request-id') ?? ''}`;
    const payment = type === 'payment' && dataId ? await deps.source.get(dataId, body) : undefined;
    const handled = payment !== undefined && ['approved', 'refunded', 'partially_refunded'].includes(payment.status);

    const fresh = await deps.ingest.submit({
      event: {
        provider: 'mercadopago',
        eventId,
        type: `${type}${typeof body.action === 'string' ? `:${body.action}` : ''}`,
        result: handled ? 'accepted' : 'ignored',
        payload: body,
      },
      ...(handled && payment
        ? {
            ...moneyIn({
              provider: 'mercadopago',
              externalId: String(payment.id),
              amount: fromDecimalNumber(payment.transaction_amount),
              currency: payment.currency_id.toUpperCase(),
              occurredAt: new Date(payment.date_approved ?? payment.date_created ?? now),
              metadata: payment.metadata,
              description: payment.description,
              formaPago: FORMA_PAGO[payment.payment_type_id ?? ''] ?? deps.defaultFormaPago,
            }),
            refunds: (payment.refunds ?? []).map((refund) => ({
              paymentProvider: 'mercadopago',
              paymentExternalId: String(payment.id),
              provider: 'mercadopago',
              externalId: String(refund.id),
              amount: fromDecimalNumber(refund.amount),
              occurredAt: new Date(refund.date_created),
            })),
          }
        : {}),
    });
    deps.metrics.webhooks.inc({
      provider: 'mercadopago',
      result: !fresh ? 'duplicate' : handled ? 'accepted' : 'ignored',
    });
    res.status(200).json({ received: true, duplicate: !fresh });
  };
}
