import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import Stripe from 'stripe';
import { parseMinorUnits } from '@timbra/cfdi-core';
import { hasUnstorableText, type GroupCommit } from '@timbra/db';
import { ApiError } from '../http/errors.ts';
import { MAX_CLOCK_SKEW_MS } from '../domain-errors.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';
import type { Metrics } from '../http/metrics.ts';
import type { RefundFacts, WebhookDelivery } from './record-webhook.ts';
import { formaPagoOf, moneyIn, stripeFormaPago } from './money-in.ts';
import { tipoCambioText } from '../payments/exchange-rates.ts';
import { prepareSale, type LineInput, type SaleDeps, type SaleDraft } from '../payments/sale.ts';
import { PoisonEvent, recordProviderEvent } from './record-event.ts';

export interface StripeWebhookDeps {
  /** Where payments are recorded: group commit, one transaction per batch. */
  ingest: GroupCommit<WebhookDelivery, boolean>;
  secret: string | undefined;
  toleranceSeconds: number;
  /** The clock (tests). */
  now?: () => number;
  /** The Stripe API (official library, STRIPE_API_KEY, pointed at STRIPE_API_URL). */
  api: Stripe | undefined;
  defaultFormaPago: string;
  metrics: Metrics;
  /** Counts bad signatures per address (429 over the limit); a signed request is never limited by them. */
  failures?: FailureLimiter;
  /** Products, customers and exchange rates: what a sale's lines, customer and TipoCambio resolve against. */
  sale: SaleDeps;
  /** Look up each PaymentIntent's Checkout Session or Invoice for its line items (more API calls per payment). */
  lineItems: boolean;
}

type Effect = Omit<WebhookDelivery, 'event'> & { handled: boolean };

const IGNORED: Effect = { handled: false };

/**
 * POST /webhooks/stripe. Verifies `Stripe-Signature` on the raw body with the official library
 * (HMAC-SHA256, timestamp tolerance), works out what the event means — asking Stripe's API where the
 * event alone does not say — and records it (recordProviderEvent: once per event id, 2xx only after
 * commit; a signed event that cannot be recorded is stored as failed).
 *
 * - `payment_intent.succeeded` → the payment (amount received; FormaPago from its charge's method);
 * - `charge.succeeded` / `charge.captured` of a captured charge → the same payment (the
 *   PaymentIntent's id names both, so the two events never make two payments); an uncaptured charge
 *   (an authorization) is ignored until it is captured, and then invoiced for the captured amount;
 * - `charge.refunded` → every succeeded refund of the charge, listed from the API (since API version
 *   2022-11-15 the event does not carry them);
 * - `refund.created`, `refund.updated`, `refund.failed`, `charge.refund.updated` → the refund as the
 *   API shows it now: succeeded → recorded (once per refund id, with its Egreso); failed or canceled
 *   → reversed if it had been recorded; pending → nothing yet;
 * - anything else → recorded as ignored.
 */
export function stripeWebhook(deps: StripeWebhookDeps) {
  const signatures = new Stripe('sk_timbra_signature_checks_only');
  return async (req: Request, res: Response) => {
    if (!deps.secret || !deps.api) throw new ApiError('webhook_not_configured');
    const api = deps.api;
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    try {
      const header = req.get('stripe-signature') ?? '';
      signatures.webhooks.signature!.verifyHeader(body, header, deps.secret, deps.toleranceSeconds);
      // The library checks only a signature's age: one timestamped ahead of our clock (beyond the
      // clocks' skew) was not made by Stripe now — refused as a bad signature too.
      const signedAt = Number(/(?:^|,)\s*t=(\d+)/.exec(header)?.[1]);
      if (!(signedAt * 1000 <= (deps.now?.() ?? Date.now()) + MAX_CLOCK_SKEW_MS))
        throw new Error('signed in the future');
    } catch {
      deps.metrics.webhooks.inc({ provider: 'stripe', result: 'bad_signature' });
      if (deps.failures?.fail(req.ip ?? 'unknown')) throw new ApiError('rate_limited', 'Too many bad signatures.');
      throw new ApiError('invalid_signature');
    }
    // Signed: from here on, whatever it says is Stripe's (or our endpoint secret's holder's) word.
    const event = parseEvent(body);
    const outcome = await recordProviderEvent(
      deps,
      {
        provider: 'stripe',
        eventId: event.id,
        type: event.type,
        payload: event.payload,
      },
      async () => {
        if (event.malformed) throw new PoisonEvent('malformed_payload', event.malformed);
        if (hasUnstorableText(event.payload))
          throw new PoisonEvent('malformed_payload', 'NUL or a lone surrogate in a string');
        return effectOf(event.payload as Stripe.Event, api, deps);
      },
      { requestId: req.requestId },
    );
    // The request id is in the X-Request-Id header too, and in every log line about this delivery.
    res
      .status(200)
      .json({ received: true, duplicate: !outcome.fresh, result: outcome.result, requestId: req.requestId });
  };
}

/** The event's id and type, or why its payload is not an event (it is then stored as failed). */
function parseEvent(body: Buffer): { id: string; type: string; payload: unknown; malformed?: string } {
  const fallbackId = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    return {
      id: fallbackId,
      type: 'unknown',
      payload: { raw: body.toString('utf8').slice(0, 10_000) },
      malformed: 'not JSON',
    };
  }
  const e = payload as { id?: unknown; type?: unknown; data?: { object?: unknown } } | null;
  const id = typeof e?.id === 'string' && e.id.length > 0 && e.id.length <= 255 ? e.id : undefined;
  const type = typeof e?.type === 'string' && e.type.length <= 255 ? e.type : undefined;
  if (!id || !type) return { id: id ?? fallbackId, type: type ?? 'unknown', payload, malformed: 'no event id or type' };
  if (typeof e?.data?.object !== 'object' || e.data.object === null || Array.isArray(e.data.object))
    return { id, type, payload, malformed: 'data.object is not an object' };
  return { id, type, payload };
}

async function effectOf(event: Stripe.Event, api: Stripe, deps: StripeWebhookDeps): Promise<Effect> {
  switch (event.type) {
    case 'payment_intent.succeeded':
      return paymentIntentEffect(event.data.object, api, deps, event.created);
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      // The session's PaymentIntent is the payment (its own events name the same one): one payment.
      const session = event.data.object;
      const piId = idOf(session.payment_intent);
      if (session.mode !== 'payment' || session.payment_status !== 'paid' || !piId) return IGNORED;
      const pi = await fromApi(() => api.paymentIntents.retrieve(piId));
      if (pi.status !== 'succeeded') return IGNORED;
      return paymentIntentEffect(pi, api, deps, event.created);
    }
    case 'invoice.paid': {
      // A Stripe Invoice is paid by a PaymentIntent (its InvoicePayment says which): that is the payment.
      const invoice = event.data.object;
      const payments = await fromApi(() =>
        api.invoicePayments.list({ invoice: text(invoice.id, 'id'), status: 'paid', limit: 10 }),
      );
      const piId = payments.data.map((p) => idOf(p.payment.payment_intent)).find((id) => id !== undefined);
      if (!piId) return IGNORED; // paid out of band, or by credit: no money moved through Stripe
      const pi = await fromApi(() => api.paymentIntents.retrieve(piId));
      if (pi.status !== 'succeeded') return IGNORED;
      return paymentIntentEffect(pi, api, deps, event.created);
    }
    case 'charge.succeeded':
    case 'charge.captured': {
      const charge = event.data.object;
      if (charge.captured !== true) return IGNORED; // an authorization: invoiced when captured, for what is captured
      return moneyInOf(
        api,
        deps,
        {
          id: idOf(charge.payment_intent) ?? text(charge.id, 'id'),
          paymentIntent: idOf(charge.payment_intent),
          amount: charge.amount_captured,
          currency: charge.currency,
          metadata: charge.metadata,
          customer: idOf(charge.customer),
          charge,
          email: charge.receipt_email ?? charge.billing_details?.email,
        },
        charge.description,
        stripeFormaPago(charge.payment_method_details),
        event.created,
      );
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      const refunds: Stripe.Refund[] = [];
      await fromApi(async () => {
        for await (const refund of api.refunds.list({ charge: text(charge.id, 'id'), limit: 100 }))
          refunds.push(refund);
      });
      return refundsEffect(refunds);
    }
    case 'refund.created':
    case 'refund.updated':
    case 'refund.failed':
    case 'charge.refund.updated': {
      // Events arrive in any order: what counts is the refund as it is now.
      const refund = await fromApi(() => api.refunds.retrieve(text(event.data.object.id, 'id')));
      return refundsEffect([refund]);
    }
    default:
      return IGNORED;
  }
}

/** Succeeded refunds → recorded (each with its Egreso); failed or canceled → reversed if recorded. */
function refundsEffect(refunds: readonly Stripe.Refund[]): Effect {
  const recorded: RefundFacts[] = [];
  const reversals: { provider: string; externalId: string }[] = [];
  for (const refund of refunds) {
    if (refund.status === 'succeeded') {
      const currency = text(refund.currency, 'currency').toUpperCase();
      recorded.push({
        paymentProvider: 'stripe',
        paymentExternalId: idOf(refund.payment_intent) ?? text(idOf(refund.charge), 'charge'),
        provider: 'stripe',
        externalId: text(refund.id, 'id'),
        amount: amountOf(parseMinorUnits(refund.amount, currency), currency),
        occurredAt: new Date(refund.created * 1000),
      });
    } else if (refund.status === 'failed' || refund.status === 'canceled') {
      reversals.push({ provider: 'stripe', externalId: refund.id });
    }
  }
  return { handled: recorded.length + reversals.length > 0, refunds: recorded, reversals };
}

async function paymentIntentEffect(
  pi: Stripe.PaymentIntent,
  api: Stripe,
  deps: StripeWebhookDeps,
  created: number,
): Promise<Effect> {
  const charge = await chargeOf(api, pi.latest_charge);
  return moneyInOf(
    api,
    deps,
    {
      id: text(pi.id, 'id'),
      paymentIntent: pi.id,
      amount: pi.amount_received,
      currency: pi.currency,
      metadata: pi.metadata,
      customer: idOf(pi.customer),
      charge,
      email: pi.receipt_email ?? charge?.receipt_email ?? charge?.billing_details?.email,
    },
    pi.description,
    stripeFormaPago(charge?.payment_method_details),
    created,
  );
}

async function moneyInOf(
  api: Stripe,
  deps: StripeWebhookDeps,
  source: {
    id: string;
    paymentIntent: string | undefined;
    amount: unknown;
    currency: unknown;
    metadata: Record<string, string> | null | undefined;
    customer: string | undefined;
    charge: Stripe.Charge | undefined;
    /** The receipt address (PaymentIntent, Charge) or the billing one. */
    email: string | null | undefined;
  },
  description: string | null | undefined,
  fromMethod: string | undefined,
  created: number,
): Promise<Effect> {
  const currency = text(source.currency, 'currency').toUpperCase();
  const received = moneyIn({
    provider: 'stripe',
    externalId: source.id,
    amount: amountOf(parseMinorUnits(source.amount, currency), currency),
    currency,
    occurredAt: new Date(created * 1000),
    metadata: source.metadata,
    description: typeof description === 'string' ? description : null,
    formaPago: formaPagoOf(source.metadata, fromMethod, deps.defaultFormaPago),
    email: source.email,
  });
  if (!received.payment) return { handled: true, ...received };
  const draft = await stripeSaleDraft(api, source, currency, received.payment.amount, deps.lineItems);
  return { handled: true, ...received, payment: await prepareSale(deps.sale, received.payment, draft, 'lenient') };
}

/**
 * What Stripe knows of the sale besides its money: the lines of the Checkout Session that made the
 * PaymentIntent (its line items, their products' metadata `timbra_product` / `sat_product_key` /
 * `sat_unit_key`, and shipping), or for a PaymentIntent alone its metadata's product; the customer
 * (metadata `timbra_customer`, else Stripe's `customer`); and the TipoCambio: metadata `tipo_cambio`,
 * else the charge's balance transaction when it was settled in pesos (`exchange_rate`).
 */
async function stripeSaleDraft(
  api: Stripe,
  source: {
    paymentIntent: string | undefined;
    metadata: Record<string, string> | null | undefined;
    customer: string | undefined;
    charge: Stripe.Charge | undefined;
  },
  currency: string,
  /** The payment's amount (decimal): a PaymentIntent's one product line is all of it. */
  amount: string,
  lineItems: boolean,
): Promise<SaleDraft> {
  const meta = (key: string) => source.metadata?.[key]?.trim() || undefined;
  const draft: SaleDraft = { providerLines: false };
  const session =
    lineItems && source.paymentIntent
      ? (await fromApi(() => api.checkout.sessions.list({ payment_intent: source.paymentIntent!, limit: 1 }))).data[0]
      : undefined;
  // Not from a Checkout Session: perhaps a Stripe Invoice's payment (its InvoicePayment names it).
  const invoiceId =
    lineItems && source.paymentIntent && !session
      ? idOf(
          (
            await fromApi(() =>
              api.invoicePayments.list({
                payment: { type: 'payment_intent', payment_intent: source.paymentIntent! },
                limit: 1,
              }),
            )
          ).data[0]?.invoice,
        )
      : undefined;
  if (session) {
    const items: Stripe.LineItem[] = [];
    await fromApi(async () => {
      for await (const item of api.checkout.sessions.listLineItems(session.id, {
        limit: 100,
        expand: ['data.price.product'],
      }))
        items.push(item);
    });
    const lines: LineInput[] = items.flatMap((item) => {
      if (!item.amount_total) return []; // a free line: nothing to invoice
      const product = typeof item.price?.product === 'object' ? (item.price.product as Stripe.Product) : undefined;
      return [
        stripeLine(
          product?.metadata,
          item.description || product?.name || 'Producto',
          item.quantity ?? 1,
          amountOf(parseMinorUnits(item.amount_total, currency), currency),
        ),
      ];
    });
    const shipping = session.shipping_cost?.amount_total;
    if (shipping)
      lines.push({
        claveProdServ: '78102203',
        claveUnidad: 'E48',
        descripcion: 'Envío',
        amount: amountOf(parseMinorUnits(shipping, currency), currency),
        taxIncluded: true,
      });
    draft.lines = lines;
  } else if (invoiceId) {
    draft.lines = await invoiceLines(api, invoiceId, currency);
  } else if (meta('timbra_product') || meta('sat_product_key')) {
    draft.lines = [stripeLine(source.metadata, meta('description') ?? 'Venta', 1, amount)];
  }
  const ours = meta('timbra_customer');
  const stripeCustomer = source.customer ?? idOf(session?.customer);
  if (ours) draft.customer = { id: ours };
  else if (stripeCustomer) draft.customer = { stripe: stripeCustomer };
  const given = meta('tipo_cambio') ? tipoCambioText(meta('tipo_cambio')!) : undefined;
  if (given) draft.tipoCambio = { rate: given, source: 'request' };
  else if (currency !== 'MXN' && source.charge?.balance_transaction) {
    const txnId = idOf(source.charge.balance_transaction)!;
    const txn = await fromApi(() => api.balanceTransactions.retrieve(txnId));
    const rate = txn.currency === 'mxn' && txn.exchange_rate ? tipoCambioText(txn.exchange_rate) : undefined;
    if (rate) draft.tipoCambio = { rate, source: 'stripe' };
  }
  return draft;
}

/**
 * A line of what Stripe sold, priced with tax: metadata `timbra_product` names one of our products
 * (its keys, taxes and description), else `sat_product_key` / `sat_unit_key` give the SAT keys and
 * `description` is the concepto's.
 */
function stripeLine(
  metadata: Record<string, string> | null | undefined,
  description: string,
  quantity: number,
  amount: string,
): LineInput {
  const m = (key: string) => metadata?.[key]?.trim() || undefined;
  const product = m('timbra_product');
  return {
    ...(product ? { product } : { descripcion: description.slice(0, 1000) }),
    ...(m('sat_product_key') ? { claveProdServ: m('sat_product_key')! } : {}),
    ...(m('sat_unit_key') ? { claveUnidad: m('sat_unit_key')! } : {}),
    cantidad: String(quantity),
    amount,
    taxIncluded: true,
  };
}

/**
 * A Stripe Invoice's lines as a sale's: each line's price after its discounts and with the taxes Stripe
 * added on top (`tax_behavior: exclusive`), its quantity, and its product's metadata (`timbra_product`,
 * `sat_product_key`, `sat_unit_key`, read from the product: since API 2025-03-31 a line names its
 * product by id). Lines of no amount are left out.
 */
async function invoiceLines(api: Stripe, invoiceId: string, currency: string): Promise<LineInput[]> {
  const items: Stripe.InvoiceLineItem[] = [];
  await fromApi(async () => {
    for await (const item of api.invoices.listLineItems(invoiceId, { limit: 100 })) items.push(item);
  });
  const products = new Map<string, Stripe.Product>();
  const lines: LineInput[] = [];
  for (const item of items) {
    const discounts = (item.discount_amounts ?? []).reduce((sum, d) => sum + d.amount, 0);
    const added = (item.taxes ?? [])
      .filter((t) => t.tax_behavior === 'exclusive')
      .reduce((sum, t) => sum + t.amount, 0);
    const gross = item.amount - discounts + added;
    if (gross <= 0) continue;
    const productId = item.pricing?.price_details?.product;
    if (productId && !products.has(productId))
      products.set(productId, await fromApi(() => api.products.retrieve(productId)));
    const product = productId ? products.get(productId) : undefined;
    lines.push(
      stripeLine(
        product?.metadata,
        item.description || product?.name || 'Producto',
        item.quantity ?? 1,
        amountOf(parseMinorUnits(gross, currency), currency),
      ),
    );
  }
  return lines;
}

/** The charge behind a PaymentIntent (for its payment method), from the event or the API. */
async function chargeOf(api: Stripe, charge: string | Stripe.Charge | null): Promise<Stripe.Charge | undefined> {
  if (!charge) return undefined;
  if (typeof charge !== 'string') return charge;
  return fromApi(() => api.charges.retrieve(charge));
}

/**
 * A call to Stripe's API, and the one place its failures are classified. What no redelivery can
 * change is a poison event: the event's own data refused before the call (an id that is not one), an
 * object Stripe does not have (404), a request Stripe refuses as invalid (400: an id of the wrong
 * shape). Anything else (network, 5xx, 429, a bad or restricted key: ours to fix) is answered 503 so
 * that Stripe redelivers later.
 */
async function fromApi<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof PoisonEvent) throw error;
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404)
      throw new PoisonEvent('provider_object_missing', error.message);
    if (error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 400)
      throw new PoisonEvent('malformed_payload', `Stripe refused the request: ${error.message}`);
    throw new ApiError('unavailable', `Stripe's API did not answer (${(error as Error).name})`);
  }
}

function amountOf(parsed: ReturnType<typeof parseMinorUnits>, currency: string): string {
  if (parsed.ok) return parsed.amount;
  throw new PoisonEvent(
    parsed.problem.code === 'unknown_currency' ? 'unsupported_currency' : 'invalid_amount',
    `${currency}: ${parsed.problem.message}`,
  );
}

function text(value: unknown, field: string): string {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  throw new PoisonEvent('malformed_payload', `${field} is missing or not a string`);
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (!value) return undefined;
  return typeof value === 'string' ? value : value.id;
}
