import { z } from 'zod';
import {
  bool,
  DATA_SETTINGS,
  EMISOR_SETTINGS,
  OUTBOUND_SETTINGS,
  PROCESS_SETTINGS,
  withSecretFiles,
} from '@timbra/settings';
import {
  fiscalSettingsProblems,
  productionEmisorProblems,
  SANDBOX_EMISOR,
  type OperatorCatalogs,
} from '@timbra/cfdi-core';
import { catalogsFromSettings, readInvoiceLogo } from '@timbra/cfdi-node';
import { DEFAULT_SCOPES, isScope, SCOPES, type Scope } from '@timbra/db/keys';
import { redisConfigProblems } from '@timbra/db/redis';

const schema = z.object({
  ...DATA_SETTINGS,
  ...PROCESS_SETTINGS,
  ...EMISOR_SETTINGS,
  ...OUTBOUND_SETTINGS,
  HOST: z.string().default('0.0.0.0'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** GET /metrics on a listener of its own (0: off); loopback unless told otherwise. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  METRICS_HOST: z.string().default('127.0.0.1'),
  /** `name:key[:admin]` pairs, comma-separated; keys are stored hashed at start-up. */
  API_KEYS: z.string().default(''),
  BODY_LIMIT: z.string().default('256kb'),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(1200),
  /** Failed authentications (bad API keys, bad webhook signatures) per address a minute; above: 429. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** Failed authentications a minute presenting one key prefix (8 characters) before they get 429. */
  AUTH_FAILURES_PER_PREFIX_PER_MINUTE: z.coerce.number().int().positive().default(10),
  IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24),
  /** Group commit of payments in: most payments in one transaction, and transactions open at once. */
  INGEST_BATCH_MAX: z.coerce.number().int().positive().default(32),
  INGEST_TRANSACTIONS: z.coerce.number().int().positive().default(1),
  EMISOR_NOMBRE: z.string().min(1),
  EMISOR_REGIMEN_FISCAL: z.string().min(1),
  EMISOR_LUGAR_EXPEDICION: z.string().regex(/^\d{5}$/),
  SERIE_INGRESO: z.string().default('A'),
  SERIE_EGRESO: z.string().default('NC'),
  SERIE_PAGO: z.string().default('P'),
  /** What the invoice says was sold when the payment does not say. */
  CONCEPTO_CLAVE_PROD_SERV: z
    .string()
    .regex(/^\d{8}$/)
    .default('01010101'),
  CONCEPTO_CLAVE_UNIDAD: z.string().default('ACT'),
  CONCEPTO_DESCRIPCION: z.string().default('Venta'),
  /** Amounts received include IVA at this rate (0.160000, 0.080000 or 0.000000). */
  IVA_TASA: z.enum(['0.160000', '0.080000', '0.000000']).default('0.160000'),
  DEFAULT_FORMA_PAGO: z
    .string()
    .regex(/^\d{2}$/)
    .default('04'),
  /** InformacionGlobal's Periodicidad; default 05 for an emisor in régimen 621, else 01. */
  PUBLICO_GENERAL_PERIODICIDAD: z.enum(['01', '02', '03', '04', '05']).optional(),
  /**
   * per-payment: a sale without the customer's data gets its own CFDI to público en general. global:
   * it is a ticket, invoiced in its period's factura global unless the customer self-invoices it on
   * /facturar first (docs/publico-general.md).
   */
  PUBLICO_GENERAL_MODE: z.enum(['per-payment', 'global']).default('per-payment'),
  /** Conceptos per factura global (a ticket gives one per tax profile); more: split in parts (docs/publico-general.md). */
  GLOBAL_MAX_CONCEPTOS: z.coerce.number().int().min(1).max(1000).default(1000),
  /** How long after a period ends its global is issued (late webhooks of its sales still join it). */
  GLOBAL_CLOSE_DELAY_MINUTES: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 60)
    .default(60),
  /** How often each API instance looks for periods to close. */
  GLOBAL_CLOSE_POLL_SECONDS: z.coerce.number().int().positive().default(60),
  SELF_INVOICE_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(20),
  SELF_INVOICE_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(5),
  // Providers: each webhook needs its secret (to check signatures) and its API key (to fetch what
  // the event does not say); without both it answers 503 webhook_not_configured.
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
  /** A restricted key with read access to Charges, PaymentIntents and Refunds is enough. */
  STRIPE_API_KEY: z.string().optional(),
  STRIPE_API_URL: z.string().url().default('https://api.stripe.com'),
  /**
   * Read the line items of the Checkout Session or Stripe Invoice behind each PaymentIntent (one or
   * two more Stripe API calls per payment): each product becomes a concepto. false: a
   * PaymentIntent's metadata only.
   */
  STRIPE_LINE_ITEMS: bool.default(true),
  MERCADOPAGO_WEBHOOK_SECRET: z.string().optional(),
  MERCADOPAGO_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
  MERCADOPAGO_ACCESS_TOKEN: z.string().optional(),
  MERCADOPAGO_API_URL: z.string().url().default('https://api.mercadopago.com'),
  /**
   * Where TipoCambio comes from for a sale in another currency when neither the request nor the
   * provider's settlement gives one (and what given rates are checked against): `banxico` (its SIE
   * API: BANXICO_API_URL and BANXICO_TOKEN) or `none`.
   */
  EXCHANGE_RATE_SOURCE: z.enum(['banxico', 'none']).default('none'),
  BANXICO_API_URL: z.string().url().default('https://www.banxico.org.mx'),
  /** Banxico SIE query token (free: https://www.banxico.org.mx/SieAPIRest/service/v1/token). */
  BANXICO_TOKEN: z.string().optional(),
  BANXICO_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  TRUST_PROXY: bool.default(false),
  /** Merchant webhook endpoints may be plain http on any host (default: https, or http to localhost only). */
  WEBHOOK_ALLOW_HTTP: bool.default(false),
  // Queue dashboard (bull-board at /admin/queues): off unless both credentials are set.
  DASHBOARD_USER: z.string().min(1).optional(),
  DASHBOARD_PASSWORD: z.string().min(12).optional(),
  DASHBOARD_ALLOW_DLQ_RETRY: bool.default(false),
});

/** Every variable the configuration reads (docs/configuration.md lists each). */
export const API_VARIABLES: readonly string[] = Object.keys(schema.shape);

/**
 * The API's settings, and the operator's SAT catalogues read from the files they name
 * (`SAT_CLAVE_PROD_SERV_FILE`, `SAT_CODIGO_POSTAL_FILE`; empty: shape checks), which every run of the
 * SAT rules in the process is given.
 */
export type ApiConfig = z.output<typeof schema> & { catalogs: OperatorCatalogs };

/** Reads the API configuration from `env`; throws listing every problem. */
export function loadConfig(given: NodeJS.ProcessEnv): ApiConfig {
  // Secrets may come from files (`<NAME>_FILE`, compose `secrets:`): read here, before anything else.
  const { env, problems: fileProblems } = withSecretFiles(given);
  const sandbox = env.TIMBRA_PROFILE === 'sandbox';
  const parsed = schema.safeParse(sandbox ? { ...SANDBOX_EMISOR, ...env } : env);
  const problems = sandbox
    ? [...fileProblems]
    : [
        ...fileProblems,
        ...productionEmisorProblems(env, [
          'EMISOR_RFC',
          'EMISOR_NOMBRE',
          'EMISOR_REGIMEN_FISCAL',
          'EMISOR_LUGAR_EXPEDICION',
        ]),
      ];
  if (!parsed.success)
    problems.push(
      ...parsed.error.issues
        .filter((i) => sandbox || !String(i.path[0]).startsWith('EMISOR_') || env[String(i.path[0])] !== undefined)
        .map((i) => `  ${i.path.join('.')}: ${i.message}`),
    );
  let catalogs: OperatorCatalogs = {};
  if (parsed.success) {
    const c = parsed.data;
    if (c.STRIPE_WEBHOOK_SECRET && !c.STRIPE_API_KEY)
      problems.push('  STRIPE_API_KEY: required with STRIPE_WEBHOOK_SECRET (refunds and payment methods are fetched)');
    if (c.EXCHANGE_RATE_SOURCE === 'banxico' && !c.BANXICO_TOKEN)
      problems.push('  BANXICO_TOKEN: required with EXCHANGE_RATE_SOURCE=banxico (its SIE API asks for one)');
    if (c.MERCADOPAGO_WEBHOOK_SECRET && !c.MERCADOPAGO_ACCESS_TOKEN)
      problems.push('  MERCADOPAGO_ACCESS_TOKEN: required with MERCADOPAGO_WEBHOOK_SECRET (payments are fetched)');
    if (c.INVOICE_LOGO_FILE) {
      const read = readInvoiceLogo(c.INVOICE_LOGO_FILE);
      if ('problem' in read) problems.push(`  INVOICE_LOGO_FILE: ${read.problem}`);
    }
    // The operator's large catalogues first: the settings below are checked against them too.
    const read = catalogsFromSettings(c);
    catalogs = read.catalogs;
    problems.push(...read.problems.map((p) => `  ${p}`));
    // Fiscal settings against the SAT catalogues and rules: a bad one would make every invoice a PAC rejection.
    problems.push(
      ...fiscalSettingsProblems(
        {
          emisorRfc: c.EMISOR_RFC,
          regimenFiscal: c.EMISOR_REGIMEN_FISCAL,
          lugarExpedicion: c.EMISOR_LUGAR_EXPEDICION,
          claveProdServ: c.CONCEPTO_CLAVE_PROD_SERV,
          claveUnidad: c.CONCEPTO_CLAVE_UNIDAD,
          periodicidad: c.PUBLICO_GENERAL_PERIODICIDAD,
          series: [c.SERIE_INGRESO, c.SERIE_EGRESO, c.SERIE_PAGO],
        },
        {
          emisorRfc: 'EMISOR_RFC',
          regimenFiscal: 'EMISOR_REGIMEN_FISCAL',
          lugarExpedicion: 'EMISOR_LUGAR_EXPEDICION',
          claveProdServ: 'CONCEPTO_CLAVE_PROD_SERV',
          claveUnidad: 'CONCEPTO_CLAVE_UNIDAD',
          periodicidad: 'PUBLICO_GENERAL_PERIODICIDAD',
          series: 'SERIE_INGRESO, SERIE_EGRESO, SERIE_PAGO',
        },
        catalogs,
      ).map((p) => `  ${p}`),
    );
    if (Boolean(c.DASHBOARD_USER) !== Boolean(c.DASHBOARD_PASSWORD)) {
      problems.push('  DASHBOARD_USER, DASHBOARD_PASSWORD: set both (dashboard on) or neither (off)');
    }
    if (sandbox && !c.CSD_PASSWORD && !c.CSD_PASSWORD_FILE && (c.CSD_CER_PATH || c.CSD_KEY_PATH)) {
      problems.push('  CSD_PASSWORD: required (or CSD_PASSWORD_FILE) with CSD_CER_PATH/CSD_KEY_PATH');
    }
  }
  if (parsed.success)
    problems.push(
      ...redisConfigProblems(parsed.data.REDIS_URL, parsed.data.REDIS_CLUSTER, parsed.data.QUEUE_PREFIX).map(
        (p) => `  ${p}`,
      ),
    );
  if (problems.length > 0 || !parsed.success) throw new Error(`invalid api configuration:\n${problems.join('\n')}`);
  return { ...parsed.data, catalogs };
}

/** Parses API_KEYS (`name:key[:admin]`, comma-separated). */
export function parseApiKeys(value: string): { name: string; key: string; scopes: Scope[] }[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const [name, key, flag] = entry.split(':');
      if (!name || !key || key.length < 16)
        throw new Error(`invalid API_KEYS entry for ${name ?? '?'}: keys need at least 16 characters`);
      // `admin`: every scope (as before scopes existed); `read+write`: those; nothing: all but admin.
      const scopes = flag === 'admin' ? [...SCOPES] : flag ? flag.split('+') : [...DEFAULT_SCOPES];
      const unknown = scopes.filter((s) => !isScope(s));
      if (unknown.length > 0 || scopes.length === 0)
        throw new Error(
          `invalid API_KEYS entry for ${name}: scopes are ${SCOPES.join(', ')} (joined with +), or admin`,
        );
      return { name, key, scopes: scopes.filter(isScope) };
    });
}
