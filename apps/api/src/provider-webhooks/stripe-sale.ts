/**
 * What a Stripe payment sold, read from Stripe's API: the lines of its Checkout Session or Invoice,
 * the customer and the TipoCambio (stripeSaleDraft), and the reading helpers every Stripe event
 * shares — an API call whose failure is either a poison event or a 503, amounts in minor units, ids.
 */
import Stripe from 'stripe';
import { parseMinorUnits } from '@timbra/cfdi-core';
import { ApiError } from '../http/errors.ts';
import { tipoCambioText } from '../payments/exchange-rates.ts';
import type { LineInput, SaleDraft } from '../payments/sale.ts';
import { PoisonEvent } from './record-event.ts';

/**
 * What Stripe knows of the sale besides its money: the lines of the Checkout Session that made the
 * PaymentIntent (its line items, their products' metadata `timbra_product` / `sat_product_key` /
 * `sat_unit_key`, and shipping), or for a PaymentIntent alone its metadata's product; the customer
 * (metadata `timbra_customer`, else Stripe's `customer`); and the TipoCambio: metadata `tipo_cambio`,
 * else the charge's balance transaction when it was settled in pesos (`exchange_rate`).
 */
export async function stripeSaleDraft(
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
    draft.lines = await sessionLines(api, session, currency);
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

/** A Checkout Session's lines: each paid line item (its product's metadata gives the SAT keys) and its shipping. */
async function sessionLines(api: Stripe, session: Stripe.Checkout.Session, currency: string): Promise<LineInput[]> {
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
  return lines;
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
export async function chargeOf(api: Stripe, charge: string | Stripe.Charge | null): Promise<Stripe.Charge | undefined> {
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
export async function fromApi<T>(call: () => Promise<T>): Promise<T> {
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

export function amountOf(parsed: ReturnType<typeof parseMinorUnits>, currency: string): string {
  if (parsed.ok) return parsed.amount;
  throw new PoisonEvent(
    parsed.problem.code === 'unknown_currency' ? 'unsupported_currency' : 'invalid_amount',
    `${currency}: ${parsed.problem.message}`,
  );
}

export function text(value: unknown, field: string): string {
  if (typeof value === 'string' && value.length > 0 && value.length <= 255) return value;
  throw new PoisonEvent('malformed_payload', `${field} is missing or not a string`);
}

export function idOf(value: string | { id: string } | null | undefined): string | undefined {
  if (!value) return undefined;
  return typeof value === 'string' ? value : value.id;
}
