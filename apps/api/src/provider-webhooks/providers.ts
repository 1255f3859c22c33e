/**
 * The payment providers' APIs, through their official libraries: Stripe's (`stripe`) and Mercado
 * Pago's (`mercadopago`), each pointed at a configurable URL — the real one in production, the
 * provider sandbox (apps/provider-sandbox) in the sandbox profile and in tests.
 */
import { MercadoPagoConfig, Payment } from 'mercadopago';
import { AppConfig } from 'mercadopago/dist/utils/config/index.js';
import Stripe from 'stripe';
import type { FetchMercadoPagoPayment } from './mercadopago-webhook.ts';

/** Stripe's API at `apiUrl` (e.g. https://api.stripe.com), 10 s a call, retried twice by the library. */
export function stripeApi(apiUrl: string, secretKey: string, connectedAccount?: string): Stripe {
  const url = new URL(apiUrl);
  return new Stripe(secretKey, {
    // Stripe Connect: every call as the platform's connected account (`Stripe-Account`).
    ...(connectedAccount ? { stripeAccount: connectedAccount } : {}),
    host: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
    protocol: url.protocol === 'http:' ? 'http' : 'https',
    timeout: 10_000,
    maxNetworkRetries: 2,
    appInfo: { name: 'Timbra' },
  });
}

/**
 * Mercado Pago's `GET /v1/payments/{id}` at `apiUrl`, with the access token: 10 s a call, retried
 * twice on 429/5xx. The SDK has no option for its URL — only the static AppConfig.BASE_URL, read
 * synchronously when a request starts — so it is set right before each call: clients with different
 * URLs in one process (tests) never see each other's (ARCHITECTURE.md, dependencies).
 */
export function mercadoPagoPayments(apiUrl: string, accessToken: string): FetchMercadoPagoPayment {
  const baseUrl = apiUrl.replace(/\/$/, '');
  const payments = new Payment(new MercadoPagoConfig({ accessToken, options: { timeout: 10_000 } }));
  return (id) => {
    (AppConfig as { BASE_URL: string }).BASE_URL = baseUrl;
    return payments.get({ id, requestOptions: { maxRetries: 2, initialDelay: 200, maxDelay: 2_000 } });
  };
}
