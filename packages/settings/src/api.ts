/** The API's own settings, section by section (it also reads every shared one: shared.ts). */
import { z } from 'zod';
import { bool, entry, section } from './define.ts';

const port = () => z.coerce.number().int().min(0).max(65535);
const perMinute = (n: number) => z.coerce.number().int().positive().default(n);

export const API_HTTP = section('Listening, keys and limits', [
  entry({ HOST: z.string().default('0.0.0.0'), PORT: port().default(3000) }, 'where the API listens'),
  entry(
    { METRICS_HOST: z.string().default('127.0.0.1'), METRICS_PORT: port().default(9464) },
    '`GET /metrics` (Prometheus) on a listener of its own, loopback by default so the metrics are never on the public API port; `METRICS_PORT=0`: off. In a container set `METRICS_HOST=0.0.0.0` and keep the port off the public network',
  ),
  entry(
    { API_KEYS: z.string().default('') },
    '`name:key[:scopes]`, comma-separated, keys ≥ 16 characters; scopes `read+write+cancel` (the default), any of `read`, `write`, `cancel`, `admin` joined with `+`, or `admin` (all four). Stored hashed at start-up, and the source of truth of the keys it made: a key it no longer lists is revoked at the next start (keys made with `keys:create` or `POST /v1/keys` are not touched)',
  ),
  entry({ BODY_LIMIT: z.string().default('256kb') }, 'request body limit (413 above)'),
  entry(
    { RATE_LIMIT_PER_MINUTE: perMinute(1200) },
    'per API key, or per address without one, on `/v1` (429 above); signed webhooks are never rate limited (the providers pace their deliveries)',
  ),
  entry(
    { AUTH_FAILURES_PER_MINUTE: perMinute(30), AUTH_FAILURES_PER_PREFIX_PER_MINUTE: perMinute(10) },
    "failed authentications (unknown or revoked keys, bad webhook signatures) per address a minute — above it every `/v1` request from the address gets 429, and further bad signatures 429 (a correctly signed webhook is never refused by them); and per key prefix (the first 8 characters presented), above which further failures get 429 (the key's owner is never locked out). Counted per API instance",
  ),
  entry(
    { IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24) },
    'how long a response is kept for its `Idempotency-Key`',
  ),
  entry({ TRUST_PROXY: bool.default(false) }, 'behind a load balancer: client addresses from `X-Forwarded-For`'),
  entry(
    {
      INGEST_BATCH_MAX: z.coerce.number().int().positive().default(32),
      INGEST_TRANSACTIONS: z.coerce.number().int().positive().default(1),
    },
    'group commit of webhook deliveries, all organizations together: most deliveries in one transaction, and transactions open at once (one serie: more only contend for its lock)',
  ),
]);

export const API_FISCAL = section(
  'The emisor and its invoices',
  [
    entry(
      {
        EMISOR_NOMBRE: z.string().min(1),
        EMISOR_REGIMEN_FISCAL: z.string().min(1),
        EMISOR_LUGAR_EXPEDICION: z.string().regex(/^\d{5}$/),
      },
      "the issuer's name, régimen fiscal (c_RegimenFiscal) and LugarExpedicion (a c_CodigoPostal)",
      'required; sandbox: `ESCUELA KEMPER URGATE`, `601`, `42501`',
    ),
    entry(
      { SERIE_EGRESO: z.string().default('NC'), SERIE_PAGO: z.string().default('P') },
      "the series of refunds' Egresos and installments' Pagos (the sales' Ingresos: `SERIE_INGRESO`, read by both apps); created at start-up, each with its gapless folio",
    ),
    entry(
      {
        CONCEPTO_CLAVE_PROD_SERV: z
          .string()
          .regex(/^\d{8}$/)
          .default('01010101'),
        CONCEPTO_CLAVE_UNIDAD: z.string().default('ACT'),
        CONCEPTO_DESCRIPCION: z.string().default('Venta'),
      },
      'the concepto when the payment says nothing more; the unit must be in c_ClaveUnidad, the product key 8 digits (in c_ClaveProdServ when `SAT_CLAVE_PROD_SERV_FILE` is set)',
    ),
    entry(
      { IVA_TASA: z.enum(['0.160000', '0.080000', '0.000000']).default('0.160000') },
      'IVA included in the amounts received',
    ),
    entry(
      {
        DEFAULT_FORMA_PAGO: z
          .string()
          .regex(/^\d{2}$/)
          .default('04'),
      },
      'c_FormaPago when the payment does not say',
    ),
  ],
  [
    'These settings are checked at start-up by the SAT rule engine: they are written into the documents they',
    'produce, and each broken rule is traced back to its setting. A bad one stops the API with a line naming',
    "the setting and the rule (e.g. `CONCEPTO_CLAVE_UNIDAD 'QQQ': CFDI40165: …`) instead of making every",
    'invoice a PAC rejection in production. c_CodigoPostal and c_ClaveProdServ are not in `sat/catalogos`:',
    'they are checked by shape unless the operator supplies them (`SAT_CLAVE_PROD_SERV_FILE`,',
    '`SAT_CODIGO_POSTAL_FILE`).',
  ].join(' '),
);

export const API_PUBLICO_GENERAL = section('Público en general', [
  entry(
    { PUBLICO_GENERAL_PERIODICIDAD: z.enum(['01', '02', '03', '04', '05']).optional() },
    'InformacionGlobal of público en general invoices (05, bimestral, only with régimen 621; its Meses are then bimesters 13–18)',
    '`05` for an emisor in régimen 621, else `01`',
  ),
  entry(
    { PUBLICO_GENERAL_MODE: z.enum(['per-payment', 'global']).default('per-payment') },
    "`per-payment`: a sale without the customer's data gets its own CFDI to público en general. `global`: it is a **ticket** (a code printed for the customer), invoiced in its period's factura global unless self-invoiced first on `/facturar` ([publico-general.md](publico-general.md))",
  ),
  entry(
    { SELF_INVOICE_REQUESTS_PER_MINUTE: perMinute(20), SELF_INVOICE_FAILURES_PER_MINUTE: perMinute(5) },
    'per address on `/facturar`: form submissions, and failed ticket lookups (wrong code or total) before 429',
  ),
]);

export const API_PROVIDERS = section('Payment providers and exchange rates', [
  entry(
    {
      STRIPE_WEBHOOK_SECRET: z.string().optional(),
      STRIPE_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
    },
    'the endpoint secret (signatures) and how old a signature may be; without the secret and the key the endpoint answers 503',
  ),
  entry(
    { STRIPE_API_KEY: z.string().optional(), STRIPE_API_URL: z.string().url().default('https://api.stripe.com') },
    'required with the secret: the key Timbra reads Charges, PaymentIntents and Refunds with (a restricted read-only key is enough), and where (the provider sandbox in `npm run dev`)',
  ),
  entry(
    {
      STRIPE_CONNECT_WEBHOOK_SECRET: z.string().optional(),
      STRIPE_CONNECT_API_KEY: z.string().optional(),
      STRIPE_CONNECT_TEST_API_KEY: z.string().optional(),
    },
    "platform mode with Stripe Connect: the secret of the platform's Connect endpoint (`/webhooks/stripe/connect`, where every connected account's events come, live and test), the platform's live secret key its connected accounts' objects are read with (`Stripe-Account`), and its test key for their test events (a test twin's). An organization names its connected account with `PUT /v1/organizations/:id/providers/stripe` `{account}` ([organizations.md](organizations.md#stripe-connect))",
    'none: Connect off',
  ),
  entry(
    { STRIPE_LINE_ITEMS: bool.default(true) },
    "read the line items of the Checkout Session or Stripe Invoice behind each PaymentIntent (one or two more Stripe API calls per payment, and one per product of an invoice): each product becomes a concepto; `false`: a PaymentIntent's metadata only (`timbra_product` / `sat_product_key`)",
  ),
  entry(
    {
      MERCADOPAGO_WEBHOOK_SECRET: z.string().optional(),
      MERCADOPAGO_TOLERANCE_SECONDS: z.coerce.number().int().positive().default(300),
    },
    'the secret signature (`x-signature`) and how old its `ts` may be; without the secret and the token the endpoint answers 503',
  ),
  entry(
    {
      MERCADOPAGO_ACCESS_TOKEN: z.string().optional(),
      MERCADOPAGO_API_URL: z.string().url().default('https://api.mercadopago.com'),
    },
    'required with the secret: every notification is only a trigger, the payment is fetched (`GET /v1/payments/{id}`) with this token from this API',
  ),
  entry(
    { EXCHANGE_RATE_SOURCE: z.enum(['banxico', 'none']).default('none') },
    "where TipoCambio comes from for a sale in another currency when neither the request (`tipoCambio`, metadata `tipo_cambio`) nor Stripe's settlement in pesos gives one, and what given rates are checked against (c_Moneda's ±5%): `banxico` (Banxico's SIE API, the FIX for USD) or `none`",
    '`none` (`banxico` in `npm run dev`)',
  ),
  entry(
    {
      BANXICO_API_URL: z.string().url().default('https://www.banxico.org.mx'),
      BANXICO_TOKEN: z.string().optional(),
      BANXICO_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
    },
    "Banxico's SIE API and its query token (free, https://www.banxico.org.mx/SieAPIRest/service/v1/token; required with `banxico`); `npm run dev` points them at the provider sandbox's copy of that API",
  ),
]);

export const API_OPERATOR = section("Merchants' webhooks and the queue dashboard", [
  entry(
    { WEBHOOK_ALLOW_HTTP: bool.default(false) },
    'merchant webhook endpoints may be plain http on any host (default: https, or http to localhost)',
  ),
  entry(
    { DASHBOARD_USER: z.string().min(1).optional(), DASHBOARD_PASSWORD: z.string().min(12).optional() },
    'the queue dashboard (bull-board) at `/admin/queues`, HTTP Basic; without both the route does not exist; password ≥ 12 characters',
  ),
  entry(
    { PLATFORM_KEY: z.string().min(32).optional() },
    'platform mode: the key that makes and manages organizations through `/v1/organizations` (each its own emisor, API keys and CSD; [organizations.md](organizations.md#platform-mode)); at least 32 characters, best given as a file (`PLATFORM_KEY_FILE`)',
    'off: the home organization (`EMISOR_*`) only',
  ),
  entry(
    { CSD_TRUSTED_CAS_FILE: z.string().min(1).optional() },
    "platform mode: the SAT's CA certificates (a PEM bundle, or one DER certificate) that a CSD uploaded through `/v1/organizations/:id/csds` must chain to (422 `csd_rejected`, `csd_untrusted`); the SAT publishes them on its portal",
    'unset: the chain is not checked, and each upload answers `chain: "unchecked"`',
  ),
  entry(
    { CONSOLE_SECRET: z.string().min(32).optional() },
    "the merchant console at `/console` ([console.md](console.md)): seals each session's cookie (it holds the API key signed in with, encrypted) and signs its forms; at least 32 characters, the same on every API instance",
    'a random one per process: sessions end when the API restarts, and work only with one API instance',
  ),
  entry(
    { CONSOLE_SESSION_HOURS: z.coerce.number().int().min(1).max(24).default(8) },
    'how long a console session lasts after sign-in (1–24 hours)',
  ),
  entry(
    { DASHBOARD_ALLOW_DLQ_RETRY: bool.default(false) },
    "offer Retry (a re-drive, with a reason, recorded as `dashboard:<user>`) on the dashboard's dead-letters page, `/admin/queues/dead-letters`; the board itself is always read-only (bull-board cannot offer Retry without Delete, Edit, Add, Empty and Obliterate)",
  ),
]);

/** The API's own sections. */
export const API_SECTIONS = [API_HTTP, API_FISCAL, API_PUBLICO_GENERAL, API_PROVIDERS, API_OPERATOR] as const;
