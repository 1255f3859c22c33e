/**
 * The settings both apps read (and `npm run ops` reads some of): Postgres and Redis, the profile and
 * the logs, the emisor's CSD and the SAT's files, and what goes out to customers and merchants.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { allowedAddressesSetting } from '@timbra/db/deliveries';
import { BRAND_COLOR } from '@timbra/db/organizations';
import { bool, entry, section } from './define.ts';

/** The repository's `sat/` (the SAT's XSLTs, schemas, catalogues and test CSDs). */
const DEFAULT_SAT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../sat');

export const DATA = section('Postgres and Redis', [
  entry(
    { DATABASE_URL: z.string().url() },
    'where the record is: a Postgres URL, e.g. `postgresql://timbra:password@db:5432/timbra`',
  ),
  entry(
    { DATABASE_POOL_SIZE: z.coerce.number().int().positive().default(10) },
    "connections per process (a stamping worker opens up to 2 more, for the stamp's statement: planned once per connection, [performance.md](performance.md))",
  ),
  entry(
    { REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379') },
    "must have `maxmemory-policy noeviction` (checked at start, on every master of a cluster); with `REDIS_CLUSTER=true`, a cluster's seed nodes, comma-separated (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`; the first's credentials and TLS apply to all)",
  ),
  entry(
    { REDIS_CLUSTER: bool.default(false) },
    '`true`: Redis is a Redis Cluster ([Scaling out](scaling.md)); `QUEUE_PREFIX` must then carry a `{hash tag}` (refused at start otherwise)',
  ),
  entry(
    { ALLOW_EVICTING_REDIS: bool.default(false) },
    'start on a Redis whose `maxmemory-policy` is not `noeviction` (a managed Redis), with a warning; otherwise both apps refuse it at start',
  ),
  entry(
    { QUEUE_PREFIX: z.string().default('{timbra}') },
    "BullMQ's key prefix, the same in both apps (the hash tag keeps a queue in one Redis Cluster slot)",
  ),
]);

export const PROCESS = section('Profile and logs', [
  entry(
    { TIMBRA_PROFILE: z.enum(['production', 'sandbox']).default('production') },
    '`production`: the emisor, its CSD and (worker) the primary PAC are required — a start without them exits 1 listing what is missing — and the SAT test RFCs are refused; `sandbox`: the SAT test emisor and CSD and the local sandbox PAC (chosen by `npm run dev`/`demo`, the compose file and the test harnesses)',
  ),
  entry(
    { LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') },
    "pino, JSON. The API logs one line per request (`req.method`, `req.url`, `res.statusCode`, `responseTime`, `requestId`, `route`, the API key's `key` name, the error `code` of a refusal, the `paymentId`/`invoiceId` it was about) — no headers; API keys, signatures, cookies and every secret below are redacted wherever they could appear",
  ),
]);

export const EMISOR = section("The emisor's CSD and the SAT's files", [
  entry(
    { EMISOR_RFC: z.string().min(1) },
    "the issuer's RFC (the API's other emisor settings are below)",
    'required; sandbox: the SAT test emisor `EKU9003173C9`',
  ),
  entry(
    { SAT_DIR: z.string().default(DEFAULT_SAT_DIR) },
    "the SAT's XSLTs, schemas and catalogues; sandbox: where the SAT test CSDs are read from when no `CSD_*` path is set",
    "the repository's `sat/`",
  ),
  entry(
    { CSD_CER_PATH: z.string().optional(), CSD_KEY_PATH: z.string().optional() },
    "the emisor's CSD: the API seals what it freezes with it, the worker the dependent documents (Egresos, Pagos) and the cancellations",
    'required; sandbox: `$SAT_DIR/csd/<EMISOR_RFC>.cer/.key`',
  ),
  entry(
    { CSD_PASSWORD: z.string().optional(), CSD_PASSWORD_FILE: z.string().optional() },
    "the CSD key's password, or the file that holds it",
    "required; sandbox: the test CSD's password file",
  ),
  entry(
    { VAULT_KEYS: z.string().optional() },
    'the master keys that seal the CSDs stored in the database (`npm run ops -- csd:upload`; envelope encryption, [operations.md](operations.md#rotating-the-csd)): one `<id>:<base64 of 32 random bytes>` a line (`openssl rand -base64 32`), the current one first, older ones after it while anything sealed with them is kept — best given as a file (`VAULT_KEYS_FILE`). With it, both apps seal with the stored CSD active at start when there is one, and with the `CSD_*` files otherwise; a stored CSD that does not open under these keys stops the app',
    'none: the `CSD_*` files only',
  ),
  entry(
    { SAT_CLAVE_PROD_SERV_FILE: z.string().optional(), SAT_CODIGO_POSTAL_FILE: z.string().optional() },
    "the SAT's c_ClaveProdServ / c_CodigoPostal as files (CSV or text, the key in the first column: the catCFDI sheet saved as CSV, or phpcfdi's export): product keys (CFDI40162) and postal codes (CFDI40126, CFDI40147) are then checked against them — at start-up (`CONCEPTO_CLAVE_PROD_SERV`, `EMISOR_LUGAR_EXPEDICION`), before a folio and whenever either app freezes; a file that cannot be read stops the app naming the variable",
    'shape checks',
  ),
  entry(
    { LATE_MARGIN_HOURS: z.coerce.number().positive().max(72).default(12) },
    "how close to leaving the PACs' 72-hour window a pending invoice's Fecha counts as late: the API lets such an invoice be corrected (re-frozen), the worker counts it in `timbra_invoices_late` (alert `TimbraInvoiceLate`)",
  ),
]);

export const OUTBOUND = section('What goes out', [
  entry(
    { INVOICE_LOGO_FILE: z.string().optional() },
    "the merchant's logo on every PDF, downloaded (API) or emailed (worker): give both the same file. PNG or JPEG, ≤ 1 MB; checked at start-up",
  ),
  entry(
    { INVOICE_COLOR: BRAND_COLOR.optional() },
    "the merchant's colour, `#RRGGBB`: the PDFs' name and headings (API and worker: give both the same), the emails' heading, `/facturar`'s header and buttons. Dark enough for white text on it (contrast ≥ 4.5:1, WCAG AA), else the app does not start",
    'none: black headings; `/facturar` in `#12355b`',
  ),
  entry(
    { WEBHOOK_ALLOWED_ADDRESSES: allowedAddressesSetting },
    'non-public IPs and CIDR ranges merchant webhook endpoints may be at (comma-separated). Any other loopback, private, link-local or reserved address is refused by the API at registration and by the worker on the address each delivery connects to ([outbound.md](outbound.md))',
    'none; `127.0.0.0/8,::1/128` in the sandbox profile',
  ),
]);

export const INVOICING = section('Ingresos and facturas globales', [
  entry(
    { SERIE_INGRESO: z.string().default('A') },
    "the serie of sales' Ingresos and of facturas globales, with its gapless folio (created by the API at start-up): the API takes a sale's folio from it, the worker a global's (its close timer) — give both apps the same",
  ),
  entry(
    { GLOBAL_MAX_CONCEPTOS: z.coerce.number().int().min(1).max(1000).default(1000) },
    "conceptos per factura global (one per ticket, one per tax profile of a ticket with several); a period with more is split in parts, each its own CFDI, folio and stamp. At most 1000 (the request schema's limit; 1000 conceptos ≈ 354 KiB of XML). The API's applies to `POST /v1/globals`, the worker's to its close timer",
  ),
]);

/** What both apps read, section by section. */
export const SHARED_SECTIONS = [DATA, PROCESS, EMISOR, INVOICING, OUTBOUND] as const;
