/**
 * @timbra/provider-client — the provider sandbox's control API (apps/provider-sandbox, README
 * "Control API"), typed: each call makes something happen at the local Stripe or Mercado Pago, whose
 * webhooks are sent (or held) before it answers. Used by the demo, tests, the chaos run and benchmarks.
 */
export type Deliver = 'now' | 'hold';

export interface StripePaymentInput {
  amount: number;
  currency?: string;
  method?: 'card_credit' | 'card_debit' | 'card_prepaid' | 'card_unknown' | 'oxxo' | 'customer_balance';
  capture?: 'automatic' | 'manual';
  metadata?: Record<string, string>;
  description?: string | null;
  created?: number;
  /** The Stripe customer paying (cus_…). */
  customer?: string;
  /** The receipt address (`receipt_email`): Timbra emails the customer's copy there. */
  receiptEmail?: string;
  /** Settled in pesos at this rate (a payment in another currency): its balance transaction's `exchange_rate`. */
  settlementExchangeRate?: number;
  /** Stripe Connect: made on this connected account (`acct_…`); its events go to the Connect endpoint. */
  account?: string;
  /** A live-mode payment (read with the live key only, when the sandbox has one). */
  livemode?: boolean;
  deliver?: Deliver;
}

export interface CheckoutSessionInput extends Omit<
  StripePaymentInput,
  'amount' | 'capture' | 'created' | 'account' | 'livemode'
> {
  /** Products bought: name, quantity, unit price in minor units, and the product's metadata. */
  lines: { name: string; quantity?: number; unitAmount: number; metadata?: Record<string, string> }[];
}

export interface MercadoPagoPaymentInput {
  amount: number;
  currency?: string;
  paymentType?: 'credit_card' | 'debit_card' | 'prepaid_card' | 'account_money' | 'ticket' | 'bank_transfer' | 'atm';
  status?: 'approved' | 'pending' | 'rejected';
  metadata?: Record<string, unknown>;
  description?: string | null;
  /** additional_info.items: what was bought (unit_price with tax). */
  items?: { id: string; title: string; quantity: number; unit_price: number }[];
  payerId?: string;
  /** The payer's email (`payer.email`): Timbra emails the customer's copy there. */
  payerEmail?: string;
  deliver?: Deliver;
}

export interface DeliveryRecord {
  id: string;
  provider: 'stripe' | 'mercadopago';
  attempts: { at: string; status: number | null; error?: string }[];
  delivered: boolean;
  pending: boolean;
}

/** Each call makes something happen at the provider; its webhooks are sent (or held) before it answers. */
export class ProviderSandboxClient {
  constructor(readonly url: string) {}

  async healthy(): Promise<boolean> {
    try {
      return (await fetch(`${this.url}/_sandbox/health`, { signal: AbortSignal.timeout(1_000) })).ok;
    } catch {
      return false;
    }
  }

  stripePayment(input: StripePaymentInput) {
    return this.call<{
      paymentIntent: { id: string; amount: number; latest_charge: string };
      charge: { id: string };
      events: string[];
    }>('POST', '/_sandbox/stripe/payments', input);
  }

  /** A Checkout Session paid at once (its PaymentIntent, charge, and `checkout.session.completed`). */
  checkoutSession(input: CheckoutSessionInput) {
    return this.call<{
      session: { id: string; amount_total: number; payment_intent: string };
      paymentIntent: { id: string; amount: number };
      events: string[];
    }>('POST', '/_sandbox/stripe/checkout_sessions', input);
  }

  /** A Stripe Invoice paid at once (its PaymentIntent, charge, InvoicePayment, and `invoice.paid`). */
  stripeInvoice(input: CheckoutSessionInput) {
    return this.call<{
      invoice: { id: string; total: number };
      paymentIntent: { id: string; amount: number };
      events: string[];
    }>('POST', '/_sandbox/stripe/invoices', input);
  }

  /** Sets a day's rate of a Banxico series (default the FIX, SF43718); "N/E" for none. */
  banxicoRate(input: { serie?: string; date: string; dato: string }) {
    return this.call<unknown>('POST', '/_sandbox/banxico/rates', input);
  }

  capture(paymentIntentId: string, input: { amount?: number; deliver?: Deliver } = {}) {
    return this.call<{ charge: { id: string; amount_captured: number }; events: string[] }>(
      'POST',
      `/_sandbox/stripe/payment_intents/${paymentIntentId}/capture`,
      input,
    );
  }

  stripeRefund(input: {
    paymentIntent?: string;
    charge?: string;
    amount?: number;
    status?: 'succeeded' | 'pending' | 'failed';
    deliver?: Deliver;
  }) {
    return this.call<{ refund: { id: string; amount: number; status: string }; events: string[] }>(
      'POST',
      '/_sandbox/stripe/refunds',
      input,
    );
  }

  updateStripeRefund(refundId: string, status: 'succeeded' | 'failed' | 'canceled', deliver: Deliver = 'now') {
    return this.call<{ refund: { id: string; status: string }; events: string[] }>(
      'POST',
      `/_sandbox/stripe/refunds/${refundId}`,
      { status, deliver },
    );
  }

  mercadoPagoPayment(input: MercadoPagoPaymentInput) {
    return this.call<{ payment: { id: number; transaction_amount: number }; events: string[] }>(
      'POST',
      '/_sandbox/mercadopago/payments',
      input,
    );
  }

  approveMercadoPago(paymentId: number | string, deliver: Deliver = 'now') {
    return this.call<{ events: string[] }>('POST', `/_sandbox/mercadopago/payments/${paymentId}/approve`, { deliver });
  }

  mercadoPagoRefund(paymentId: number | string, input: { amount?: number; deliver?: Deliver } = {}) {
    return this.call<{ refund: { id: number; amount: number }; events: string[] }>(
      'POST',
      `/_sandbox/mercadopago/payments/${paymentId}/refunds`,
      input,
    );
  }

  /** Sends an event (again, or for the first time if held); answers with its delivery record. */
  deliver(eventId: string) {
    return this.call<DeliveryRecord>('POST', `/_sandbox/events/${eventId}/deliver`, {});
  }

  delivery(eventId: string) {
    return this.call<DeliveryRecord>('GET', `/_sandbox/deliveries/${eventId}`);
  }

  async deliveries(): Promise<DeliveryRecord[]> {
    return (await this.call<{ deliveries: DeliveryRecord[] }>('GET', '/_sandbox/deliveries')).deliveries;
  }

  /** Replays a sent notification's exact signed headers with another body (a forgery attempt). */
  replayMercadoPagoNotification(notificationId: string, body: unknown) {
    return this.call<{ status: number; body: string }>(
      'POST',
      `/_sandbox/mercadopago/notifications/${notificationId}/replay`,
      { body },
    );
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`provider sandbox ${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  }
}
