import { createHmac, randomUUID, type X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { Router } from 'express';
import got from 'got';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import Stripe from 'stripe';
import { insertTfd, parseStampedCfdi, type OperatorCatalogs } from '@timbra/cfdi-core';
import { dejavuFonts } from '@timbra/cfdi-node';
import {
  loadTestCsd,
  startProviderSandbox,
  testTfd,
  type ProviderSandboxClient,
  type TestRfc,
} from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import {
  OrganizationClients,
  openOrganization,
  openOrganizationIn,
  type EffectiveSettings,
} from '@timbra/db/organizations';
import { csdsToWatch, efirmasToWatch } from '@timbra/db/csds';
import type { KeyVault } from '@timbra/cfdi-node';
import { LOOPBACK_RANGES } from '@timbra/db/deliveries';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { withConsole } from '../src/console/console-app.ts';
import { createApp, type AppDeps } from '../src/app.ts';
import { createPlatform, organizationApis } from '../src/organizations/platform.ts';
import { webhookIngestAcross } from '../src/provider-webhooks/webhook-ingest.ts';
import { bootstrap } from '../src/bootstrap.ts';
import { REDACT } from '../src/http/log-redact.ts';
import { FailureLimiter } from '../src/http/failure-limiter.ts';
import { BanxicoRates } from '../src/payments/exchange-rates.ts';
import { createMetrics, listenMetrics } from '../src/http/metrics.ts';
import { paymentDepsIn } from '../src/payments/payment-deps.ts';
import type { RecordPaymentDeps } from '../src/payments/record-payment.ts';
import type { GlobalSettings } from '../src/tickets/record-tickets.ts';
import { mercadoPagoPayments, stripeApi } from '../src/provider-webhooks/providers.ts';

export const STRIPE_SECRET = 'whsec_test_timbra_0123456789abcdef';
export const MP_SECRET = 'mp-test-secret-0123456789';
export const STRIPE_KEY = 'sk_test_timbra_api_tests';
export const MP_TOKEN = 'TEST-timbra-api-tests';
export const CONSOLE_SECRET = 'console-test-secret-0123456789abcdef';
export const KEYS = {
  pos: 'pos-key-0123456789abcdef',
  other: 'other-key-0123456789abcdef',
  admin: 'admin-key-0123456789abcdef',
};
export const EMISOR: { rfc: TestRfc; nombre: string; regimenFiscal: string; lugarExpedicion: string } = {
  rfc: 'EKU9003173C9',
  nombre: 'ESCUELA KEMPER URGATE',
  regimenFiscal: '601',
  lugarExpedicion: '42501',
};

export interface TestApi {
  url: string;
  /** GET /metrics, on its own listener (METRICS_PORT). */
  metricsUrl: string;
  prisma: PrismaClient;
  db: TestDatabase;
  /** What the API records payments with (CSD, emisor, serie, settings). */
  payments: RecordPaymentDeps;
  /** The provider sandbox (Stripe and Mercado Pago), when asked for: it sends its webhooks to this API. */
  providers: ProviderSandboxClient;
  close: () => Promise<void>;
}

/**
 * The API on a free port over a fresh migrated database and the local Redis. Its Stripe and Mercado
 * Pago clients point at a provider sandbox port; with `providers: true` the sandbox runs there (a
 * process of its own, ~1 s to start) and sends its signed webhooks to this API.
 */
const BANXICO_TOKEN = 'banxico-sandbox-token';

export async function startApi(
  options: {
    rateLimitPerMinute?: number;
    /** Failed authentications per address / per key prefix a minute (default: high, tests share 127.0.0.1). */
    authFailures?: { perAddress: number; perPrefix: number };
    dashboard?: Router;
    providers?: boolean;
    /** Exchange rates from the provider sandbox's Banxico (needs `providers`). */
    rates?: boolean;
    /** Another API instance over this one's database (not dropped when this one closes). */
    database?: TestDatabase;
    /** Collects every log line the API writes (level info and above). */
    logs?: string[];
    /** Público en general in global mode (tickets, globals, /facturar). */
    global?: GlobalSettings;
    /** InformacionGlobal's Periodicidad (default 01). */
    periodicidad?: string;
    /** The operator's SAT catalogues every rule run is given (default: none, shape checks). */
    catalogs?: OperatorCatalogs;
    /** The self-invoicing page's limits per address (default: high, tests share 127.0.0.1). */
    selfInvoice?: { requestsPerMinute: number; failuresPerMinute: number };
    /** Webhook endpoints may be plain http:// (WEBHOOK_ALLOW_HTTP, as `npm run demo` runs the API). */
    webhookAllowHttp?: boolean;
    /** TRUST_PROXY: X-Forwarded-* from a proxy in front are believed (default false). */
    trustProxy?: boolean;
    /** Non-public ranges endpoints may be at (default: loopback, as the sandbox profile allows). */
    webhookAllowedAddresses?: readonly string[];
    /**
     * Another organization than EMISOR's (with `database`, one beside it): its emisor, sealing with
     * that RFC's SAT test CSD, and keys of its own (named as EMISOR's are).
     */
    organization?: { emisor: typeof EMISOR; keys: typeof KEYS };
    /** Platform mode, as main runs it: every organization over one pool, `/v1/organizations` for `key`. */
    platform?: { key: string; vault: KeyVault; trustedCas?: X509Certificate[] };
    /**
     * Stripe Connect in platform mode (needs `providers`): the Connect endpoint's secret, and the
     * provider sandbox's live key as the platform's live key (its test key is STRIPE_KEY).
     */
    connect?: { webhookSecret: string; liveKey: string; testKey?: string };
  } = {},
): Promise<TestApi> {
  const db = options.database ?? (await createTestDatabase());
  // As the API's main opens it: the organization's row, then a client row-level security holds to it.
  // First, so that a refusal leaves no listener behind (an open server would keep Jest from exiting).
  const emisor = options.organization?.emisor ?? EMISOR;
  const keys = options.organization?.keys ?? KEYS;
  const clients = options.platform ? new OrganizationClients(db.url, { poolSize: 10 }) : undefined;
  const owner = clients ? createPrisma(db.url, { poolSize: 2 }) : undefined;
  const { prisma, organizationId } = await (
    clients ? openOrganizationIn(clients, owner!, emisor) : openOrganization(db.url, emisor, { poolSize: 10 })
  ).catch(async (error: unknown) => {
    await clients?.close();
    await owner?.$disconnect();
    if (!options.database) await db.drop();
    throw error;
  });
  // The API's address comes next: the provider sandbox sends its webhooks there, and the API calls
  // the sandbox's address, which it learns when the sandbox has bound its own port.
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sandbox = options.providers
    ? await startProviderSandbox({
        stripeWebhookUrl: `${url}/webhooks/stripe`,
        mercadoPagoWebhookUrl: `${url}/webhooks/mercadopago`,
        stripeWebhookSecret: STRIPE_SECRET,
        mercadoPagoWebhookSecret: MP_SECRET,
        stripeSecretKey: STRIPE_KEY,
        mercadoPagoAccessToken: MP_TOKEN,
        ...(options.connect
          ? {
              stripeLiveSecretKey: options.connect.liveKey,
              stripeConnect: {
                webhookUrl: `${url}/webhooks/stripe/connect`,
                webhookSecret: options.connect.webhookSecret,
              },
            }
          : {}),
      })
    : undefined;
  // Without a sandbox nothing answers there (hand-built events only).
  const providerUrl = sandbox?.url ?? 'http://127.0.0.1:9';
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  await redis.connect();
  const csd = loadTestCsd(emisor.rfc);
  await bootstrap(prisma, {
    organizationId,
    series: [
      { serie: 'A', kind: 'I' },
      { serie: 'NC', kind: 'E' },
      { serie: 'P', kind: 'P' },
    ],
    apiKeys: [
      { name: 'pos', key: keys.pos, scopes: ['read', 'write', 'cancel'] },
      { name: 'other', key: keys.other, scopes: ['read', 'write', 'cancel'] },
      { name: 'ops', key: keys.admin, scopes: ['read', 'write', 'cancel', 'admin'] },
    ],
  });
  // The deployment's settings, as main builds them from SERIE_*, PUBLICO_GENERAL_* and CONCEPTO_*.
  const defaults: EffectiveSettings = {
    series: { ingreso: 'A', egreso: 'NC', pago: 'P' },
    publicoGeneral: { mode: options.global ? 'global' : 'per-payment', periodicidad: options.periodicidad ?? '01' },
    concepto: { claveProdServ: '01010101', claveUnidad: 'ACT', descripcion: 'Venta' },
    email: {},
    branding: {},
  };
  // The builder main.ts uses, over the tests' catalogues, IVA and global limit.
  const paymentsOf = paymentDepsIn({
    catalogs: options.catalogs ?? {},
    IVA_TASA: '0.160000',
    GLOBAL_MAX_CONCEPTOS: options.global?.maxConceptosPerGlobal ?? 1000,
  });
  const payments = paymentsOf(organizationId, emisor, csd, defaults);
  const metrics = createMetrics(
    clients
      ? {
          watched: () => csdsToWatch(clients.unscoped, new Date()),
          efirmas: () => efirmasToWatch(clients.unscoped, new Date()),
        }
      : {},
  );
  const logger = options.logs
    ? pino(
        { level: 'info', redact: { paths: REDACT, censor: '[redacted]' } },
        { write: (line: string) => void options.logs!.push(line) },
      )
    : pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const ingest = { maxBatch: 32, maxInFlight: 2 };
  const home: AppDeps = {
    prisma,
    redis,
    logger,
    metrics,
    databaseUrl: db.url,
    payments,
    pdf: { fonts: dejavuFonts() },
    ...(options.rates ? { rates: new BanxicoRates({ url: providerUrl, token: BANXICO_TOKEN }) } : {}),
    defaultFormaPago: '04',
    idempotencyTtlHours: 24,
    ingest,
    // Platform mode, as main builds it: every organization's webhooks in the same group commits.
    ...(clients ? { ingestAcross: webhookIngestAcross(clients.across(), logger, ingest) } : {}),
    bodyLimit: '64kb',
    rateLimitPerMinute: options.rateLimitPerMinute ?? 100_000,
    authFailuresPerMinute: options.authFailures?.perAddress ?? 100_000,
    authFailuresPerPrefixPerMinute: options.authFailures?.perPrefix ?? 100_000,
    trustProxy: options.trustProxy ?? false,
    selfInvoice: options.selfInvoice ?? { requestsPerMinute: 100_000, failuresPerMinute: 100_000 },
    ...(options.dashboard ? { dashboard: options.dashboard } : {}),
    ...(options.webhookAllowHttp ? { webhookAllowHttp: true } : {}),
    webhookAllowedAddresses: options.webhookAllowedAddresses ?? LOOPBACK_RANGES,
    // Hand-built events (no provider sandbox) have no Checkout Session to look up.
    stripe: {
      secret: STRIPE_SECRET,
      toleranceSeconds: 300,
      api: stripeApi(providerUrl, STRIPE_KEY),
      lineItems: options.providers ?? false,
    },
    mercadoPago: {
      secret: MP_SECRET,
      toleranceSeconds: 300,
      fetchPayment: mercadoPagoPayments(`${providerUrl}/mercadopago`, MP_TOKEN),
    },
  };
  const connect = options.connect && {
    webhookSecret: options.connect.webhookSecret,
    apiKey: options.connect.liveKey,
    testApiKey: options.connect.testKey,
    toleranceSeconds: 300,
  };
  const app = clients
    ? createPlatform({
        clients,
        home: { organizationId, app: createApp(home) },
        build: organizationApis({
          clients,
          vault: options.platform!.vault,
          home,
          defaults,
          paymentsOf,
          connect,
          providers: {
            stripe: (apiKey, account) => stripeApi(providerUrl, apiKey, account),
            mercadoPago: (accessToken) => mercadoPagoPayments(`${providerUrl}/mercadopago`, accessToken),
          },
        }),
        routes: {
          owner: owner!,
          platformKey: options.platform!.key,
          defaults,
          vault: options.platform!.vault,
          trustedCas: options.platform!.trustedCas,
          failures: new FailureLimiter({ perAddress: 100_000, perPrefix: 100_000 }),
          bodyLimit: '64kb',
        },
        connect,
        logger: home.logger,
        metrics,
        trustProxy: false,
      })
    : createApp(home);
  // As main serves it: the merchant console in front of the API.
  server.on(
    'request',
    withConsole(
      app,
      { CONSOLE_SECRET, CONSOLE_SESSION_HOURS: 8, TRUST_PROXY: home.trustProxy },
      { logger: home.logger, metrics },
    ),
  );
  const metricsServer = await listenMetrics(metrics, 0, '127.0.0.1');
  return {
    url,
    metricsUrl: `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`,
    prisma,
    db,
    payments,
    get providers(): ProviderSandboxClient {
      if (!sandbox) throw new Error('startApi({ providers: true }) runs the provider sandbox');
      return sandbox.client;
    },
    close: async () => {
      await sandbox?.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await new Promise((r) => metricsServer.close(r));
      await prisma.$disconnect();
      await clients?.close();
      await owner?.$disconnect();
      await redis.quit();
      if (!options.database) await db.drop();
    },
  };
}

/**
 * POSTs JSON to `api` as the `pos` client (more headers, e.g. Idempotency-Key, merged in) and
 * returns the parsed answer whatever its status.
 */
export function jsonPoster(api: () => TestApi, key = KEYS.pos) {
  // As a careful client does: every creating POST carries an Idempotency-Key (a fresh one unless the
  // test gives its own), so a request without externalId is still recorded once.
  return (path: string, body: object, headers: Record<string, string> = {}) =>
    got.post(`${api().url}${path}`, {
      json: body,
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID(), ...headers },
      throwHttpErrors: false,
      responseType: 'json',
    });
}

const stripe = new Stripe('sk_test_unused');

/** A Stripe event body and its signature header, as Stripe would send them. */
export function stripeDelivery(
  event: object,
  options: { secret?: string; timestamp?: number } = {},
): { body: string; signature: string } {
  const body = JSON.stringify(event);
  const signature = stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: options.secret ?? STRIPE_SECRET,
    ...(options.timestamp ? { timestamp: options.timestamp } : {}),
  });
  return { body, signature };
}

/** Mercado Pago's `x-signature` for a notification: the manifest of its data.id, request id and ts, HMAC-SHA256. */
export function mpSign(
  dataId: string,
  requestId: string,
  ts = Math.floor(Date.now() / 1000),
  secret = MP_SECRET,
): string {
  const manifest = `id:${dataId.toLowerCase()};request-id:${requestId};ts:${ts};`;
  return `ts=${ts},v1=${createHmac('sha256', secret).update(manifest).digest('hex')}`;
}

let counter = 0;

/** A payment_intent.succeeded event (amount in centavos). */
export function paymentIntentSucceeded(
  overrides: {
    id?: string;
    eventId?: string;
    amount?: number;
    metadata?: Record<string, string>;
    created?: number;
  } = {},
) {
  counter++;
  const id = overrides.id ?? `pi_test_${process.pid}_${counter}_${Date.now()}`;
  return {
    id: overrides.eventId ?? `evt_${id}`,
    object: 'event',
    type: 'payment_intent.succeeded',
    created: overrides.created ?? Math.floor(Date.now() / 1000) - 60,
    data: {
      object: {
        id,
        object: 'payment_intent',
        amount: overrides.amount ?? 116000,
        amount_received: overrides.amount ?? 116000,
        currency: 'mxn',
        description: 'Colegiatura',
        metadata: overrides.metadata ?? {},
      },
    },
  };
}

/**
 * What the worker writes when the PAC stamps: a stand-in TFD over the frozen XML's sello (with the
 * frozen bytes, the stamped CFDI), its UUID, status stamped — in one update, so the stamp's triggers
 * fire as in production (invoice.stamped and its deliveries).
 */
export async function stampAsWorker(prisma: PrismaClient, invoiceId: string, uuid: string): Promise<void> {
  const row = await prisma.invoice.findUniqueOrThrow({ where: { id: invoiceId } });
  const sello = parseStampedCfdi(insertTfd(row.frozenXml!, testTfd('x'))).sello;
  const tfdXml = testTfd(sello, uuid);
  await prisma.invoice.update({ where: { id: invoiceId }, data: { status: 'stamped', uuid, tfdXml } });
}

/** Rows of every table a request can write (what a refused request must leave at 0). */
export async function writtenRows(prisma: PrismaClient): Promise<Record<string, number>> {
  return {
    payments: await prisma.payment.count(),
    invoices: await prisma.invoice.count(),
    outbox: await prisma.outboxRow.count(),
    webhook_events: await prisma.webhookEvent.count(),
    idempotency_keys: await prisma.idempotencyKey.count(),
    refunds: await prisma.refund.count(),
    installments: await prisma.installment.count(),
    products: await prisma.product.count(),
    customers: await prisma.customer.count(),
    endpoints: await prisma.webhookEndpoint.count(),
    tickets: await prisma.ticket.count(),
  };
}
