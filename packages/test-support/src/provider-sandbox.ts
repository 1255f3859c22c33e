/**
 * The provider sandbox (apps/provider-sandbox) for tests, the demo, the chaos run and benchmarks: a
 * real process on a free port, and a typed client of its control API. Apps never import each other,
 * so it is started, not imported.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './system.ts';

const here = dirname(fileURLToPath(import.meta.url));
const MAIN = resolve(here, '../../../apps/provider-sandbox/src/main.ts');

export interface ProviderSandboxSettings {
  /** Timbra's `/webhooks/stripe` and `/webhooks/mercadopago` URLs; unset: events are held. */
  stripeWebhookUrl?: string;
  mercadoPagoWebhookUrl?: string;
  stripeWebhookSecret: string;
  mercadoPagoWebhookSecret: string;
  stripeSecretKey: string;
  mercadoPagoAccessToken: string;
  /** Default 100,300,1000 (ms). */
  retryDelaysMs?: readonly number[];
  /** Default: a free one. */
  port?: number;
}

/** Settings for a sandbox whose secrets are made up for this run. */
export function providerSecrets(tag = 'test') {
  const suffix = Math.random().toString(36).slice(2, 10);
  return {
    stripeWebhookSecret: `whsec_${tag}_${suffix}`,
    mercadoPagoWebhookSecret: `mp_${tag}_${suffix}`,
    stripeSecretKey: `sk_test_${tag}_${suffix}`,
    mercadoPagoAccessToken: `TEST-${tag}-${suffix}`,
  };
}

/** The environment of the provider sandbox process for `settings`. */
export function providerSandboxEnv(settings: ProviderSandboxSettings & { port: number }): NodeJS.ProcessEnv {
  return {
    PROVIDER_SANDBOX_PORT: String(settings.port),
    PROVIDER_SANDBOX_STRIPE_SECRET_KEY: settings.stripeSecretKey,
    PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET: settings.stripeWebhookSecret,
    PROVIDER_SANDBOX_MP_ACCESS_TOKEN: settings.mercadoPagoAccessToken,
    PROVIDER_SANDBOX_MP_WEBHOOK_SECRET: settings.mercadoPagoWebhookSecret,
    PROVIDER_SANDBOX_RETRY_DELAYS_MS: (settings.retryDelaysMs ?? [100, 300, 1000]).join(','),
    ...(settings.stripeWebhookUrl ? { PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL: settings.stripeWebhookUrl } : {}),
    ...(settings.mercadoPagoWebhookUrl ? { PROVIDER_SANDBOX_MP_WEBHOOK_URL: settings.mercadoPagoWebhookUrl } : {}),
  };
}

export interface RunningProviderSandbox {
  url: string;
  client: ProviderSandboxClient;
  stop(): Promise<void>;
}

/** Starts the provider sandbox process and waits until it answers. */
export async function startProviderSandbox(settings: ProviderSandboxSettings): Promise<RunningProviderSandbox> {
  const port = settings.port ?? (await freePort());
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--conditions=@timbra/source', MAIN], {
    env: { ...process.env, ...providerSandboxEnv({ ...settings, port }), LOG_LEVEL: 'error', NODE_OPTIONS: '' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const client = new ProviderSandboxClient(url);
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the provider sandbox exited (${child.exitCode})`);
    if (await client.healthy()) break;
    if (i > 300) throw new Error('the provider sandbox did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    client,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

export type Deliver = 'now' | 'hold';

export interface StripePaymentInput {
  amount: number;
  currency?: string;
  method?: 'card_credit' | 'card_debit' | 'card_prepaid' | 'card_unknown' | 'oxxo' | 'customer_balance';
  capture?: 'automatic' | 'manual';
  metadata?: Record<string, string>;
  description?: string | null;
  created?: number;
  deliver?: Deliver;
}

export interface MercadoPagoPaymentInput {
  amount: number;
  currency?: string;
  paymentType?: 'credit_card' | 'debit_card' | 'prepaid_card' | 'account_money' | 'ticket' | 'bank_transfer' | 'atm';
  status?: 'approved' | 'pending' | 'rejected';
  metadata?: Record<string, unknown>;
  description?: string | null;
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
