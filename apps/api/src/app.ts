import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import type { Logger } from 'pino';
import type { PdfOptions } from '@timbra/cfdi-core';
import { migrationStatus, MIGRATIONS_DIR, pingDatabase, type GroupCommitOptions, type PrismaClient } from '@timbra/db';
import { hashApiKey } from '@timbra/db/keys';
import type { DeadLetterQueue } from '@timbra/db/outbox';
import type { RedisConnection } from '@timbra/db/redis';
import { ApiError } from './http/errors.ts';
import { errorHandler } from './http/error-handler.ts';
import { requestPlumbing } from './http/plumbing.ts';
import { apiKeyAuth, apiVersion, requireScopes } from './keys/auth.ts';
import { DASHBOARD_PATH } from './operations/dashboard.ts';
import { refuseUnstorableInput } from './http/unstorable-input.ts';
import { DOCS_PATH, referenceRoutes } from './http/reference.ts';
import type { Metrics } from './http/metrics.ts';
import { cancellationRoutes } from './invoices/cancellation-routes.ts';
import { invoiceDocumentRoutes } from './invoices/document-routes.ts';
import { invoiceRoutes } from './invoices/invoice-routes.ts';
import { metadataRoutes } from './http/metadata-routes.ts';
import { customerRoutes } from './catalog/customer-routes.ts';
import { productRoutes } from './catalog/product-routes.ts';
import { FailureLimiter } from './http/failure-limiter.ts';
import { keyOrganizationOf, keyRoutes } from './keys/key-routes.ts';
import { outboxRoutes } from './operations/outbox-routes.ts';
import type { ExchangeRateSource } from './payments/exchange-rates.ts';
import { paymentRoutes } from './payments/payment-routes.ts';
import { refundInstallmentRoutes } from './refunds-installments/refund-routes.ts';
import { ticketRoutes } from './tickets/ticket-routes.ts';
import { selfInvoicePage, SELF_INVOICE_PATH } from './tickets/self-invoice-page.ts';
import { webhookEventRoutes } from './provider-webhooks/webhook-event-routes.ts';
import { deliveryRoutes } from './deliveries/delivery-routes.ts';
import { eventRoutes } from './deliveries/event-routes.ts';
import { webhookEndpointRoutes } from './deliveries/webhook-endpoint-routes.ts';
import type { RecordPaymentDeps } from './payments/record-payment.ts';
import { webhookIngest, type IngestAcross } from './provider-webhooks/webhook-ingest.ts';
import { mercadoPagoWebhook, type FetchMercadoPagoPayment } from './provider-webhooks/mercadopago-webhook.ts';
import type Stripe from 'stripe';
import { stripeWebhook } from './provider-webhooks/stripe-webhook.ts';

export interface AppDeps {
  prisma: PrismaClient;
  redis: RedisConnection;
  logger: Logger;
  metrics: Metrics;
  databaseUrl: string;
  payments: RecordPaymentDeps;
  /** Exchange rates for sales in other currencies (EXCHANGE_RATE_SOURCE); undefined: none configured. */
  rates?: ExchangeRateSource | undefined;
  defaultFormaPago: string;
  idempotencyTtlHours: number;
  /** A pending invoice may be corrected this many hours before its Fecha leaves the PAC's window (default 12). */
  lateMarginHours?: number;
  /** Group commit of webhook deliveries (payments, refunds, ignored events). */
  ingest: GroupCommitOptions;
  /**
   * Platform mode: every organization's deliveries in the same group commits (main.ts builds one
   * for the deployment); absent, this app batches its organization's alone (`ingest`'s options).
   */
  ingestAcross?: IngestAcross;
  bodyLimit: string;
  rateLimitPerMinute: number;
  /** Failed authentications (bad keys, bad webhook signatures) an address may make a minute (default 30). */
  authFailuresPerMinute?: number;
  /** Failed authentications a minute with one key prefix before they are answered 429 (default 10). */
  authFailuresPerPrefixPerMinute?: number;
  trustProxy: boolean;
  /** WEBHOOK_ALLOW_HTTP: merchant endpoints may be plain http anywhere (else https, or http to localhost). */
  webhookAllowHttp?: boolean;
  /** Non-public ranges merchant endpoints may be at (see @timbra/db endpoint-addresses.ts); default none. */
  webhookAllowedAddresses?: readonly string[];
  /** How every PDF is printed: its fonts, and the merchant's logo (INVOICE_LOGO_FILE, read at start-up). */
  pdf: Omit<PdfOptions, 'cancelled'>;
  /** The self-invoicing page's limits per address (global mode): POSTs and failed ticket lookups a minute. */
  selfInvoice?: { requestsPerMinute: number; failuresPerMinute: number };
  /** Where the self-invoicing page is (default /facturar; platform mode: /facturar/<organization id>). */
  selfInvoicePath?: string;
  /** The queue dashboard (see http/dashboard.ts), mounted at /admin/queues when given. */
  dashboard?: Router | undefined;
  /** Failed authentications counted across organizations' APIs (platform mode shares one); default: this app's own. */
  failures?: FailureLimiter;
  /** The stamp-dlq queue: a re-drive settles its letter there (else the worker's sweeper does). */
  deadLetters?: DeadLetterQueue;
  stripe: {
    secret: string | undefined;
    toleranceSeconds: number;
    api: Stripe | undefined;
    /** STRIPE_LINE_ITEMS: read each payment's Checkout Session line items (default true). */
    lineItems?: boolean;
  };
  mercadoPago: {
    secret: string | undefined;
    toleranceSeconds: number;
    fetchPayment: FetchMercadoPagoPayment | undefined;
  };
}

/** The API as an Express app; every dependency injected (the composition root is main.ts). */
export function createApp(deps: AppDeps) {
  const app = express();
  // The use cases record payments, refunds and installments with the rate source at hand (TipoCambio).
  const payments: RecordPaymentDeps = { ...deps.payments, rates: deps.rates };
  const ingest = deps.ingestAcross?.for(payments) ?? webhookIngest(deps.prisma, payments, deps.logger, deps.ingest);
  requestPlumbing(app, deps);
  const sale = { prisma: deps.prisma, settings: payments.settings, rates: deps.rates };
  const failures =
    deps.failures ??
    new FailureLimiter({
      perAddress: deps.authFailuresPerMinute ?? 30,
      perPrefix: deps.authFailuresPerPrefixPerMinute ?? 10,
    });
  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', readiness(deps));
  // The API's reference and its error codes (no key: it is public documentation).
  app.use(DOCS_PATH, referenceRoutes());

  // Webhooks: Stripe signs the raw bytes, so its body is kept raw. A signed delivery is never rate
  // limited (the providers pace their own deliveries and retries); bad signatures count as failed
  // authentication per address (429 over the limit), so a flood of forgeries cannot starve them.
  const raw = express.raw({ type: () => true, limit: deps.bodyLimit });
  app.post(
    '/webhooks/stripe',
    raw,
    stripeWebhook({
      ingest,
      secret: deps.stripe.secret,
      toleranceSeconds: deps.stripe.toleranceSeconds,
      api: deps.stripe.api,
      defaultFormaPago: deps.defaultFormaPago,
      metrics: deps.metrics,
      sale,
      lineItems: deps.stripe.lineItems ?? true,
      failures,
    }),
  );
  app.post(
    '/webhooks/mercadopago',
    requireJson,
    express.json({ limit: deps.bodyLimit }),
    mercadoPagoWebhook({
      ingest,
      fetchPayment: deps.mercadoPago.fetchPayment,
      secret: deps.mercadoPago.secret,
      toleranceSeconds: deps.mercadoPago.toleranceSeconds,
      defaultFormaPago: deps.defaultFormaPago,
      metrics: deps.metrics,
      sale,
      failures,
    }),
  );

  // The customers' self-invoicing page (global mode): HTML, no API key, its own limits and CSRF token.
  app.use(
    deps.selfInvoicePath ?? SELF_INVOICE_PATH,
    selfInvoicePage({
      prisma: deps.prisma,
      payments,
      logger: deps.logger,
      metrics: deps.metrics,
      merchant: { name: payments.settings.emisor.nombre, logo: deps.pdf.logo, color: deps.pdf.color },
      requestsPerMinute: deps.selfInvoice?.requestsPerMinute ?? 20,
      failuresPerMinute: deps.selfInvoice?.failuresPerMinute ?? 5,
      pdf: deps.pdf,
    }),
  );

  app.use('/v1', v1Router(deps, payments, failures));
  if (deps.dashboard) app.use(DASHBOARD_PATH, deps.dashboard);

  app.use((_req, _res, next) => next(new ApiError('not_found')));
  app.use(errorHandler(deps.logger));
  return app;
}

/** `/v1`: rate limited per key, JSON bodies, API keys and their scopes, then each group's routes. */
function v1Router(deps: AppDeps, payments: RecordPaymentDeps, failures: FailureLimiter): Router {
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: deps.rateLimitPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    // Per API key (hashed: the store never holds a key), else per address.
    keyGenerator: (req) => {
      const key = req.get('authorization') ?? req.get('x-api-key');
      return key ? hashApiKey(key) : ipKeyGenerator(req.ip ?? '0.0.0.0');
    },
    handler: (_req, _res, next) => next(new ApiError('rate_limited')),
  });

  const v1 = express.Router();
  v1.use(limiter);
  v1.use((req, _res, next) =>
    req.method === 'POST' || req.method === 'PATCH' ? requireJson(req, _res, next) : next(),
  );
  v1.use(express.json({ limit: deps.bodyLimit, strict: true }));
  v1.use(apiKeyAuth(deps.prisma, failures));
  v1.use(apiVersion);
  v1.use(requireScopes);
  v1.use(refuseUnstorableInput);
  const paymentDeps = {
    prisma: deps.prisma,
    payments,
    rates: deps.rates,
    defaultFormaPago: deps.defaultFormaPago,
    idempotencyTtlHours: deps.idempotencyTtlHours,
    metrics: deps.metrics,
  };
  v1.use(paymentRoutes(paymentDeps));
  v1.use(refundInstallmentRoutes(paymentDeps));
  const invoiceDeps = {
    prisma: deps.prisma,
    pdf: deps.pdf,
    idempotencyTtlHours: deps.idempotencyTtlHours,
    metrics: deps.metrics,
    corrections: {
      payments,
      defaultFormaPago: deps.defaultFormaPago,
      lateMarginMs: (deps.lateMarginHours ?? 12) * 3_600_000,
      organizationId: payments.organizationId,
    },
  };
  v1.use(invoiceRoutes(invoiceDeps));
  v1.use(invoiceDocumentRoutes(invoiceDeps));
  v1.use(metadataRoutes(deps.prisma));
  v1.use(cancellationRoutes(invoiceDeps));
  const catalogDeps = {
    prisma: deps.prisma,
    catalogs: payments.catalogs,
    idempotencyTtlHours: deps.idempotencyTtlHours,
    metrics: deps.metrics,
  };
  v1.use(productRoutes(catalogDeps));
  v1.use(customerRoutes(catalogDeps));
  v1.use(ticketRoutes({ prisma: deps.prisma, payments, metrics: deps.metrics }));
  v1.use(keyRoutes(deps.prisma, keyOrganizationOf(payments)));
  v1.use(outboxRoutes(deps.prisma, deps.deadLetters));
  v1.use(webhookEventRoutes(deps.prisma));
  v1.use(
    webhookEndpointRoutes({
      prisma: deps.prisma,
      allowHttp: deps.webhookAllowHttp ?? false,
      allowedAddresses: deps.webhookAllowedAddresses ?? [],
    }),
  );
  v1.use(deliveryRoutes({ prisma: deps.prisma }));
  v1.use(eventRoutes({ prisma: deps.prisma }));
  return v1;
}

/** A body must be JSON; a POST without one (a re-drive) needs no content type. */
function requireJson(req: Request, _res: Response, next: NextFunction): void {
  const empty = !req.get('transfer-encoding') && Number(req.get('content-length') ?? 0) === 0;
  next(empty || req.is('application/json') ? undefined : new ApiError('unsupported_media_type'));
}

/** Ready when Postgres answers with every migration applied and Redis answers PING. */
function readiness(deps: AppDeps) {
  let migrations: { ok: boolean; at: number } | undefined;
  return async (_req: Request, res: Response) => {
    const checks: Record<string, string> = {};
    try {
      await pingDatabase(deps.prisma);
      checks.postgres = 'ok';
      if (!migrations || Date.now() - migrations.at > 10_000) {
        const s = await migrationStatus(deps.databaseUrl, MIGRATIONS_DIR);
        migrations = { ok: s.pending.length === 0 && s.modified.length === 0, at: Date.now() };
      }
      checks.migrations = migrations.ok ? 'ok' : 'pending';
    } catch {
      checks.postgres = 'unreachable';
    }
    try {
      checks.redis = (await deps.redis.ping()) === 'PONG' ? 'ok' : 'unexpected';
    } catch {
      checks.redis = 'unreachable';
    }
    const ok = Object.values(checks).every((v) => v === 'ok') && checks.migrations === 'ok';
    res.status(ok ? 200 : 503).json({ ok, checks });
  };
}
