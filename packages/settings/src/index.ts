/**
 * @timbra/settings — what the API and the worker both read from the environment, defined once: each
 * app's schema spreads the groups it uses beside its own settings (docs/configuration.md lists them
 * all). Secrets may come from files (`<NAME>_FILE`), read here before any schema parses them.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { allowedAddressesSetting } from '@timbra/db/deliveries';

export { SECRET_SETTINGS, withSecretFiles } from './secret-files.ts';

/** A `true` / `false` setting. */
export const bool = z.enum(['true', 'false']).transform((v) => v === 'true');

/** The repository's `sat/` (the SAT's XSLTs, schemas, catalogues and test CSDs). */
const DEFAULT_SAT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../sat');

/** Postgres and Redis: where the record and the queues are. */
export const DATA_SETTINGS = {
  DATABASE_URL: z.string().url(),
  DATABASE_POOL_SIZE: z.coerce.number().int().positive().default(10),
  /** One URL; with REDIS_CLUSTER=true, a cluster's seed nodes, comma-separated. */
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER: bool.default(false),
  /** Accept a Redis whose maxmemory-policy is not noeviction (managed Redis), with a loud warning. */
  ALLOW_EVICTING_REDIS: bool.default(false),
  /** BullMQ key prefix; keep the `{…}` hash tag for Redis Cluster. */
  QUEUE_PREFIX: z.string().default('{timbra}'),
};

/** How a process runs: its profile and its logs. */
export const PROCESS_SETTINGS = {
  /**
   * `production` (default): the emisor, its CSD and its password must be configured. `sandbox`: the
   * SAT's test emisor and CSD from SAT_DIR (npm run dev/demo, the compose file, tests).
   */
  TIMBRA_PROFILE: z.enum(['production', 'sandbox']).default('production'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
};

/** The emisor's CSD and the SAT's files: what freezing and sealing need (no defaults in production). */
export const EMISOR_SETTINGS = {
  EMISOR_RFC: z.string().min(1),
  SAT_DIR: z.string().default(DEFAULT_SAT_DIR),
  CSD_CER_PATH: z.string().optional(),
  CSD_KEY_PATH: z.string().optional(),
  /** The CSD key password: from this variable or from CSD_PASSWORD_FILE. No default. */
  CSD_PASSWORD: z.string().optional(),
  CSD_PASSWORD_FILE: z.string().optional(),
  /** The operator's c_ClaveProdServ / c_CodigoPostal (CSV or text, the key first): the SAT rules check membership. */
  SAT_CLAVE_PROD_SERV_FILE: z.string().optional(),
  SAT_CODIGO_POSTAL_FILE: z.string().optional(),
  /**
   * How close to leaving the PACs' 72-hour window a pending document's Fecha counts as late: the API
   * lets such an invoice be re-frozen, the worker counts it (`timbra_invoices_late`).
   */
  LATE_MARGIN_HOURS: z.coerce.number().positive().max(72).default(12),
};

/** What the customer's and the merchant's systems receive: the PDF's logo, where webhooks may go. */
export const OUTBOUND_SETTINGS = {
  /** The merchant's logo on every PDF (PNG or JPEG, ≤ 1 MB), downloaded or emailed. */
  INVOICE_LOGO_FILE: z.string().optional(),
  /** Non-public IPs and CIDR ranges merchant webhook endpoints may be at (default none; loopback in the sandbox profile). */
  WEBHOOK_ALLOWED_ADDRESSES: allowedAddressesSetting,
};
