/** Composition root of the API: config, logger, Prisma, Redis, CSD, then the Express app. */
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { pino } from 'pino';
import { csdExpiry, csdExpiryWarning } from '@timbra/cfdi-core';
import { dejavuFonts, emisorCsd, readCsdFiles, vaultOf } from '@timbra/cfdi-node';
import { createPrisma } from '@timbra/db';
import { activeCsd, csdsToWatch, efirmasToWatch } from '@timbra/db/csds';
import { OrganizationClients, openOrganizationIn, type EffectiveSettings } from '@timbra/db/organizations';
import { allowedAddressesFor } from '@timbra/db/deliveries';
import { STAMP_DLQ } from '@timbra/db/outbox';
import { connectRedis, bullmqErrorListener, logRedisOutages, redisTarget } from '@timbra/db/redis';
import { createApp, type AppDeps } from './app.ts';
import { withConsole } from './console/console-app.ts';
import { FailureLimiter } from './http/failure-limiter.ts';
import { createPlatform, organizationApis } from './organizations/platform.ts';
import { REDACT } from './http/log-redact.ts';
import { bootstrap } from './bootstrap.ts';
import { loadConfig, parseApiKeys } from './config.ts';
import { dashboard } from './operations/dashboard.ts';
import { createMetrics, listenMetrics } from './http/metrics.ts';
import { mercadoPagoPayments, stripeApi } from './provider-webhooks/providers.ts';
import { BanxicoRates } from './payments/exchange-rates.ts';
import { paymentDepsIn } from './payments/payment-deps.ts';
import { webhookIngestAcross } from './provider-webhooks/webhook-ingest.ts';

// Every fatal error is one JSON line (the configuration's problems too) and a non-zero exit.
const fatal = (logger: pino.Logger, error: unknown, message: string): never => {
  logger.fatal({ err: error }, message);
  process.exit(1);
};
const config = (() => {
  try {
    return loadConfig(process.env);
  } catch (error) {
    // What is missing or wrong, one problem an item, and no stack: a configuration mistake, not a bug.
    const [title, ...problems] = (error as Error).message.split('\n');
    pino({ name: 'api' }).fatal({ problems: problems.map((p) => p.trim()) }, title);
    return process.exit(1);
  }
})();
const logger = pino({ level: config.LOG_LEVEL, name: 'api', redact: { paths: REDACT, censor: '[redacted]' } });
process.on('uncaughtException', (error) => fatal(logger, error, 'uncaught exception'));
process.on('unhandledRejection', (error) => fatal(logger, error, 'unhandled rejection'));
for (const [provider, name] of [['stripe', 'STRIPE'] as const, ['mercadopago', 'MERCADOPAGO'] as const])
  if (!config[`${name}_WEBHOOK_SECRET`])
    logger.warn({ provider }, `${provider} webhooks are off: no ${name}_WEBHOOK_SECRET (503 webhook_not_configured)`);

const redis = connectRedis(redisTarget(config.REDIS_URL, config.REDIS_CLUSTER), {
  lazyConnect: true,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
});
logRedisOutages(redis, logger);
const connected = await redis.connect().then(
  () => true,
  (error: unknown) => {
    logger.warn({ err: error }, 'redis not reachable yet; /readyz will say so');
    return false;
  },
);
// The API queues nothing itself, but its dashboard and re-drives share the worker's Redis: an
// evicting Redis loses jobs, so the API refuses it too (checked when reachable at start).
if (connected) {
  const policy = ((await redis.config('GET', 'maxmemory-policy')) as string[])[1];
  if (policy !== 'noeviction' && !config.ALLOW_EVICTING_REDIS)
    fatal(
      logger,
      new Error(`maxmemory-policy is ${policy}`),
      'Redis maxmemory-policy must be noeviction (set ALLOW_EVICTING_REDIS=true to run anyway)',
    );
  if (policy !== 'noeviction') logger.warn({ policy }, 'Redis may evict queued jobs (ALLOW_EVICTING_REDIS=true)');
}

const emisor = {
  rfc: config.EMISOR_RFC,
  nombre: config.EMISOR_NOMBRE,
  regimenFiscal: config.EMISOR_REGIMEN_FISCAL,
  lugarExpedicion: config.EMISOR_LUGAR_EXPEDICION,
};
// Every organization's client over one pool: row-level security holds each to its organization's
// rows (@timbra/db/organizations). The owner's client writes the organizations' own rows.
const clients = new OrganizationClients(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
const owner = createPrisma(config.DATABASE_URL, { poolSize: 2 });
// The home organization's row from EMISOR_*, then its client.
const { prisma, organizationId } = await openOrganizationIn(clients, owner, emisor).catch((error: unknown) =>
  fatal(logger, error, 'the organization could not be opened'),
);
const { revokedKeys } = await bootstrap(prisma, {
  organizationId,
  series: [
    { serie: config.SERIE_INGRESO, kind: 'I' },
    { serie: config.SERIE_EGRESO, kind: 'E' },
    { serie: config.SERIE_PAGO, kind: 'P' },
  ],
  apiKeys: parseApiKeys(config.API_KEYS),
});
if (revokedKeys.length > 0) logger.warn({ keys: revokedKeys }, 'API keys no longer in API_KEYS were revoked');

// The CSD it seals with: the stored one active now (VAULT_KEYS set and one uploaded with
// `ops csd:upload`), else the CSD_* files. A stored CSD that does not open stops the API.
const vault = vaultOf(config.VAULT_KEYS);
const sealing = await emisorCsd({
  stored: vault ? await activeCsd(prisma, organizationId, new Date()) : undefined,
  vault,
  files: readCsdFiles(config),
}).catch((error: unknown) => fatal(logger, error, 'the stored CSD does not open under VAULT_KEYS'));
if (!sealing)
  fatal(
    logger,
    new Error('no CSD'),
    'no CSD: set CSD_CER_PATH, CSD_KEY_PATH and CSD_PASSWORD(_FILE), or VAULT_KEYS with a CSD stored by `npm run ops -- csd:upload`',
  );
const { csd } = sealing!;
logger.info({ noCertificado: csd.noCertificado, source: sealing!.source }, 'sealing with this CSD');
// 30 days before the CSD's end: a warning now, and the metric's alert (TimbraCsdExpiring) until renewed.
const csdWarning = csdExpiryWarning(csdExpiry(csd, new Date()));
if (csdWarning) logger.warn({ alert: 'csd_expiring', noCertificado: csd.noCertificado }, csdWarning);

// The expiry of every organization's CSD (TimbraCsdExpiring), the home one's too when it comes from
// files, and of every e.firma the SAT's record is read with (TimbraEfirmaExpiring).
const metrics = createMetrics({
  csd,
  organizationId,
  watched: () => csdsToWatch(clients.unscoped, new Date()),
  efirmas: () => efirmasToWatch(clients.unscoped, new Date()),
});
// The dead-letter queue: re-drives settle their letter on it (the dashboard shows it).
const dlq = new Queue(STAMP_DLQ, { connection: redis, prefix: config.QUEUE_PREFIX });
const queueError = (error: Error, queue: string) =>
  bullmqErrorListener(logger, 'queue error', 'warn', { queue })(error);
dlq.on('error', (error) => queueError(error, STAMP_DLQ));
const board =
  config.DASHBOARD_USER && config.DASHBOARD_PASSWORD
    ? dashboard({
        prisma,
        redis,
        dlq,
        prefix: config.QUEUE_PREFIX,
        user: config.DASHBOARD_USER,
        password: config.DASHBOARD_PASSWORD,
        allowDlqRetry: config.DASHBOARD_ALLOW_DLQ_RETRY,
        onQueueError: queueError,
        // Every organization's letters (the owner reads them all), each re-drive in its organization's name.
        organizations: { owner, clientFor: (id) => clients.for(id) },
      })
    : undefined;
if (!board) logger.info('queue dashboard off: DASHBOARD_USER / DASHBOARD_PASSWORD not set');
// The deployment's settings: the home organization's, and any other's where it sets nothing of its own.
const defaults: EffectiveSettings = {
  series: { ingreso: config.SERIE_INGRESO, egreso: config.SERIE_EGRESO, pago: config.SERIE_PAGO },
  publicoGeneral: { mode: config.PUBLICO_GENERAL_MODE, periodicidad: config.PUBLICO_GENERAL_PERIODICIDAD },
  concepto: {
    claveProdServ: config.CONCEPTO_CLAVE_PROD_SERV,
    claveUnidad: config.CONCEPTO_CLAVE_UNIDAD,
    descripcion: config.CONCEPTO_DESCRIPCION,
  },
  // The worker's EMAIL_FROM: the API does not send emails.
  email: {},
  branding: config.INVOICE_COLOR ? { color: config.INVOICE_COLOR } : {},
};
const paymentsOf = paymentDepsIn(config);
const failures = new FailureLimiter({
  perAddress: config.AUTH_FAILURES_PER_MINUTE,
  perPrefix: config.AUTH_FAILURES_PER_PREFIX_PER_MINUTE,
});
const ingest = { maxBatch: config.INGEST_BATCH_MAX, maxInFlight: config.INGEST_TRANSACTIONS };
const home: AppDeps = {
  prisma,
  failures,
  redis,
  logger,
  ...(board ? { dashboard: board.router } : {}),
  deadLetters: dlq,
  metrics,
  databaseUrl: config.DATABASE_URL,
  payments: paymentsOf(organizationId, emisor, csd, defaults),
  selfInvoice: {
    requestsPerMinute: config.SELF_INVOICE_REQUESTS_PER_MINUTE,
    failuresPerMinute: config.SELF_INVOICE_FAILURES_PER_MINUTE,
  },
  rates:
    config.EXCHANGE_RATE_SOURCE === 'banxico' && config.BANXICO_TOKEN
      ? new BanxicoRates({
          url: config.BANXICO_API_URL,
          token: config.BANXICO_TOKEN,
          timeoutMs: config.BANXICO_TIMEOUT_MS,
        })
      : undefined,
  defaultFormaPago: config.DEFAULT_FORMA_PAGO,
  idempotencyTtlHours: config.IDEMPOTENCY_TTL_HOURS,
  lateMarginHours: config.LATE_MARGIN_HOURS,
  ingest,
  // Every organization's webhooks share the group commits (payments spread over many batch too).
  ingestAcross: webhookIngestAcross(clients.across(), logger, ingest),
  bodyLimit: config.BODY_LIMIT,
  rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
  authFailuresPerMinute: config.AUTH_FAILURES_PER_MINUTE,
  authFailuresPerPrefixPerMinute: config.AUTH_FAILURES_PER_PREFIX_PER_MINUTE,
  trustProxy: config.TRUST_PROXY,
  webhookAllowHttp: config.WEBHOOK_ALLOW_HTTP,
  webhookAllowedAddresses: allowedAddressesFor(config.WEBHOOK_ALLOWED_ADDRESSES, config.TIMBRA_PROFILE),
  pdf: {
    fonts: dejavuFonts(),
    // Checked by loadConfig: a PNG or JPEG that can be read.
    ...(config.INVOICE_LOGO_FILE ? { logo: readFileSync(config.INVOICE_LOGO_FILE) } : {}),
    ...(config.INVOICE_COLOR ? { color: config.INVOICE_COLOR } : {}),
  },
  stripe: {
    secret: config.STRIPE_WEBHOOK_SECRET,
    toleranceSeconds: config.STRIPE_TOLERANCE_SECONDS,
    api: config.STRIPE_API_KEY ? stripeApi(config.STRIPE_API_URL, config.STRIPE_API_KEY) : undefined,
    lineItems: config.STRIPE_LINE_ITEMS,
  },
  mercadoPago: {
    secret: config.MERCADOPAGO_WEBHOOK_SECRET,
    toleranceSeconds: config.MERCADOPAGO_TOLERANCE_SECONDS,
    fetchPayment: config.MERCADOPAGO_ACCESS_TOKEN
      ? mercadoPagoPayments(config.MERCADOPAGO_API_URL, config.MERCADOPAGO_ACCESS_TOKEN)
      : undefined,
  },
};
const app = createPlatform({
  clients,
  home: { organizationId, app: createApp(home) },
  build: organizationApis({
    clients,
    vault,
    home,
    defaults,
    paymentsOf,
    // An organization's own accounts, at the providers' addresses the home one uses.
    connect: config.connect,
    providers: {
      stripe: (apiKey, account) => stripeApi(config.STRIPE_API_URL, apiKey, account),
      mercadoPago: (accessToken) => mercadoPagoPayments(config.MERCADOPAGO_API_URL, accessToken),
    },
  }),
  routes: {
    owner,
    platformKey: config.PLATFORM_KEY,
    defaults,
    catalogs: config.catalogs,
    vault,
    trustedCas: config.trustedCas,
    failures,
    bodyLimit: config.BODY_LIMIT,
  },
  connect: config.connect,
  logger,
  metrics,
  trustProxy: config.TRUST_PROXY,
});

// The merchant console in front of the API it calls (console/console-app.ts).
const server = withConsole(app, config, { logger, metrics }).listen(config.PORT, config.HOST, () =>
  logger.info({ port: config.PORT }, 'api listening'),
);
server.on('error', (error) => fatal(logger, error, `the API port ${config.PORT} could not be opened`));
const metricsServer =
  config.METRICS_PORT > 0
    ? await listenMetrics(metrics, config.METRICS_PORT, config.METRICS_HOST).catch((error: unknown) =>
        fatal(logger, error, `the metrics port ${config.METRICS_PORT} could not be opened`),
      )
    : undefined;
if (metricsServer) logger.info({ host: config.METRICS_HOST, port: config.METRICS_PORT }, 'metrics listening');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new requests, finishing in-flight ones');
    metricsServer?.close();
    server.close(() => {
      Promise.allSettled([clients.close(), owner.$disconnect(), board?.close(), dlq.close()])
        .then(() => redis.quit())
        .then(
          () => process.exit(0),
          () => process.exit(1),
        );
    });
    setTimeout(() => process.exit(1), 15_000).unref();
  });
}
