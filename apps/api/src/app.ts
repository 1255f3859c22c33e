import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { PdfOptions } from '@timbra/cfdi-core';
import { pinoHttp } from 'pino-http';
import {
  GroupCommit,
  migrationStatus,
  MIGRATIONS_DIR,
  pingDatabase,
  type GroupCommitOptions,
  type PrismaClient,
} from '@timbra/db';
import { hashApiKey } from '@timbra/db/keys';
import type { DeadLetterQueue } from '@timbra/db/outbox';
import type { RedisConnection } from '@timbra/db/redis';
import { API_ERRORS, ApiError, fromDomainError } from './http/errors.ts';
import { DomainError } from './domain-errors.ts';
import { apiKeyAuth, requireScopes } from './keys/auth.ts';
import { DASHBOARD_PATH } from './operations/dashboard.ts';
import { refuseUnstorableInput } from './http/unstorable-input.ts';
import type { Metrics } from './http/metrics.ts';
import { cancellationRoutes } from './invoices/cancellation-routes.ts';
import { invoiceDocumentRoutes } from './invoices/document-routes.ts';
import { invoiceRoutes } from './invoices/invoice-routes.ts';
import { customerRoutes } from './catalog/customer-routes.ts';
import { productRoutes } from './catalog/product-routes.ts';
import { FailureLimiter } from './http/failure-limiter.ts';
import { keyRoutes } from './keys/key-routes.ts';
import { outboxRoutes } from './operations/outbox-routes.ts';
import type { ExchangeRateSource } from './payments/exchange-rates.ts';
import { paymentRoutes } from './payments/payment-routes.ts';
import { refundInstallmentRoutes } from './refunds-installments/refund-routes.ts';
import { ticketRoutes } from './tickets/ticket-routes.ts';
import { selfInvoicePage, SELF_INVOICE_PATH } from './tickets/self-invoice-page.ts';
import { webhookEventRoutes } from './provider-webhooks/webhook-event-routes.ts';
import { deliveryRoutes } from './deliveries/delivery-routes.ts';
import { webhookEndpointRoutes } from './deliveries/webhook-endpoint-routes.ts';
import type { RecordPaymentDeps } from './payments/record-payment.ts';
import type { RecordedRefund } from './refunds-installments/record-refund.ts';
import { recordDeliveries, type ReversedRefund, type WebhookDelivery } from './provider-webhooks/record-webhook.ts';
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
  /** The queue dashboard (see http/dashboard.ts), mounted at /admin/queues when given. */
  dashboard?: Router;
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

/** Query parameters that carry a credential (`?api_key=…`, `?token=…`): never accepted. */
const CREDENTIAL_PARAM =
  /^(api[_-]?key|apikey|x-api-key|key|token|access[_-]?token|authorization|auth|secret|password)$/i;

/** The API as an Express app; every dependency injected (the composition root is main.ts). */
export function createApp(deps: AppDeps) {
  const app = express();
  // The use cases record payments, refunds and installments with the rate source at hand (TipoCambio).
  const payments: RecordPaymentDeps = { ...deps.payments, rates: deps.rates };
  // A refund whose Ingreso is dead-lettered (or needs data) waits for an operator: say so.
  const reportBlocked = (refund: RecordedRefund & { requestId?: string }) => {
    if (refund.waitingFor?.blocked)
      deps.logger.warn(
        {
          alert: 'egreso_blocked',
          requestId: refund.requestId,
          refundId: refund.refundId,
          egresoId: refund.egresoId,
          ingreso: refund.waitingFor,
        },
        "a refund's Egreso waits for an Ingreso that cannot be stamped as it is",
      );
  };
  // Money arrived, its invoice cannot be issued as it is: loud (also the worker's gauge and alert).
  const reportNeedsData = (payment: {
    paymentId: string;
    invoiceId: string | null;
    provider: string;
    externalId: string;
    requestId?: string;
    problems?: readonly { path: string; message: string }[];
  }) =>
    deps.logger.warn(
      { alert: 'invoice_needs_data', ...payment },
      'a payment was recorded but its invoice needs data: fix it (GET /v1/invoices?status=needs_data)',
    );
  // A refund reversed at the provider: its Egreso is cancelled, or an operator must cancel it.
  const reportReversal = (reversal: ReversedRefund & { requestId?: string }) =>
    deps.logger.warn(
      { alert: reversal.cancellationRequested ? undefined : 'reversed_refund_egreso_stands', ...reversal },
      reversal.cancellationRequested
        ? "a refund was reversed at the provider: its Egreso's cancellation is requested"
        : 'a refund was reversed at the provider and its Egreso is not stamped yet: cancel it once stamped',
    );
  const ingest = GroupCommit.transaction(
    deps.prisma,
    (tx, deliveries: WebhookDelivery[]) =>
      recordDeliveries(tx, payments, deliveries, {
        onRefund: reportBlocked,
        onReversal: reportReversal,
        onNeedsData: reportNeedsData,
      }),
    deps.ingest,
  );
  const sale = { prisma: deps.prisma, settings: payments.settings, rates: deps.rates };
  const failures = new FailureLimiter({
    perAddress: deps.authFailuresPerMinute ?? 30,
    perPrefix: deps.authFailuresPerPrefixPerMinute ?? 10,
  });
  app.disable('x-powered-by');
  app.set('trust proxy', deps.trustProxy);
  // HSTS and CSP's upgrade-insecure-requests only mean something over TLS; sent over plain HTTP at a
  // non-loopback address, they made browsers refuse the dashboard and /facturar's form. HSTS goes
  // out on TLS (or https behind TRUST_PROXY); upgrade-insecure-requests never (the pages load
  // nothing from elsewhere).
  app.use(
    helmet({
      strictTransportSecurity: false,
      contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
    }),
  );
  app.use((req, res, next) => {
    if (req.secure) res.set('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
    next();
  });
  app.use((req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    res.set('X-Request-Id', req.requestId);
    const end = deps.metrics.httpDuration.startTimer({ method: req.method });
    res.on('finish', () =>
      end({ route: (req.route as { path?: string } | undefined)?.path ?? 'unmatched', status: String(res.statusCode) }),
    );
    next();
  });
  // A credential in the query string ends up in logs, proxies and browser histories: refused, and the
  // query is cut from the URL before anything logs it.
  app.use((req, _res, next) => {
    const query = req.url.indexOf('?');
    if (query < 0) return next();
    const names = [...new URLSearchParams(req.url.slice(query + 1)).keys()];
    if (!names.some((n) => CREDENTIAL_PARAM.test(n))) return next();
    req.url = `${req.url.slice(0, query)}?[redacted]`;
    next(new ApiError('credentials_in_query'));
  });
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req) => (req as Request).requestId ?? randomUUID(),
      // One lean line per request: what happened and to what — no headers (security headers were
      // most of each line; credentials must never be there anyway).
      serializers: {
        req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      customProps: (req, res) => requestLogProps(req as Request, res as Response),
      autoLogging: { ignore: (req) => req.url === '/healthz' },
    }),
  );

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/readyz', readiness(deps));

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
    SELF_INVOICE_PATH,
    selfInvoicePage({
      prisma: deps.prisma,
      payments,
      logger: deps.logger,
      metrics: deps.metrics,
      merchant: payments.settings.emisor.nombre,
      requestsPerMinute: deps.selfInvoice?.requestsPerMinute ?? 20,
      failuresPerMinute: deps.selfInvoice?.failuresPerMinute ?? 5,
      pdf: deps.pdf,
    }),
  );

  const v1 = express.Router();
  v1.use(limiter);
  v1.use((req, _res, next) =>
    req.method === 'POST' || req.method === 'PATCH' ? requireJson(req, _res, next) : next(),
  );
  v1.use(express.json({ limit: deps.bodyLimit, strict: true }));
  v1.use(apiKeyAuth(deps.prisma, failures));
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
      emisorId: payments.emisorId,
    },
  };
  v1.use(invoiceRoutes(invoiceDeps));
  v1.use(invoiceDocumentRoutes(invoiceDeps));
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
  v1.use(keyRoutes(deps.prisma));
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
  app.use('/v1', v1);
  if (deps.dashboard) app.use(DASHBOARD_PATH, deps.dashboard);

  app.use((_req, _res, next) => next(new ApiError('not_found')));
  app.use(errorHandler(deps.logger));
  return app;
}

/** A body must be JSON; a POST without one (a re-drive) needs no content type. */
function requireJson(req: Request, _res: Response, next: NextFunction): void {
  const empty = !req.get('transfer-encoding') && Number(req.get('content-length') ?? 0) === 0;
  next(empty || req.is('application/json') ? undefined : new ApiError('unsupported_media_type'));
}

/** One error middleware: `{ error: { code, message, details?, requestId } }`; never a stack trace. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = error as { type?: string; status?: number; message?: string };
    let apiError: ApiError;
    if (error instanceof ApiError) apiError = error;
    else if (error instanceof DomainError) apiError = fromDomainError(error);
    else if (e.type === 'entity.parse.failed') apiError = new ApiError('malformed_json');
    else if (e.type === 'entity.too.large') apiError = new ApiError('payload_too_large');
    else if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
      apiError = new ApiError('unsupported_media_type');
    else if (typeof e.status === 'number' && e.status >= 400 && e.status < 500)
      apiError = new ApiError('malformed_json', 'The request could not be read.');
    else {
      logger.error({ err: error, requestId: req.requestId }, 'unexpected error');
      apiError = new ApiError('internal');
    }
    if (apiError.status >= 500 && apiError.code !== 'internal')
      logger.warn({ code: apiError.code, requestId: req.requestId }, apiError.message);
    for (const [k, v] of Object.entries(apiError.headers ?? {})) res.set(k, v);
    res.locals.errorCode = apiError.code;
    res.status(apiError.status).json({
      error: {
        code: apiError.code,
        message: apiError.message || API_ERRORS[apiError.code].message,
        ...(apiError.details !== undefined ? { details: apiError.details } : {}),
        requestId: req.requestId,
      },
    });
  };
}

/**
 * What a request's log line says besides method, URL and status: its id, the route matched, the API
 * key's name, the error code of a refusal, and the payment or invoice it was about.
 */
function requestLogProps(req: Request, res: Response): Record<string, unknown> {
  // pino-http asks at the request's start (the bindings of every line about it) and again at its end
  // (adding what is new): the id once at the start, the rest at the end, so no line says a key twice.
  if (!res.headersSent) return { requestId: req.requestId };
  const route = (req.route as { path?: string } | undefined)?.path;
  const id = (res.locals.ids as Record<string, string> | undefined)?.id;
  const about =
    id && route?.startsWith('/payments') ? 'paymentId' : id && route?.startsWith('/invoices') ? 'invoiceId' : undefined;
  return {
    ...(route ? { route } : {}),
    ...(req.client ? { key: req.client.name } : {}),
    ...(typeof res.locals.errorCode === 'string' ? { code: res.locals.errorCode } : {}),
    ...(about ? { [about]: id } : {}),
    ...(typeof res.locals.paymentId === 'string' ? { paymentId: res.locals.paymentId } : {}),
  };
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
