import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's `sat/` (apps/pac-sandbox/src → ../../../sat). */
export const DEFAULT_SAT_DIR = resolve(here, '../../../sat');

const port = z.coerce.number().int().min(0).max(65535);

const schema = z.object({
  SANDBOX_HOST: z.string().default('127.0.0.1'),
  SANDBOX_PRIMARY_PORT: port.default(4010),
  SANDBOX_BACKUP_PORT: port.default(4011),
  SANDBOX_ADMIN_PORT: port.default(4019),
  /** Token for /__admin; when unset the admin API is off. */
  SANDBOX_ADMIN_TOKEN: z.string().min(8).optional(),
  SANDBOX_SW_USER: z.string().min(1).default('timbra'),
  SANDBOX_SW_PASSWORD: z.string().min(1).default('timbra-sandbox'),
  SANDBOX_FINKOK_USER: z.string().min(1).default('timbra@example.com'),
  SANDBOX_FINKOK_PASSWORD: z.string().min(1).default('timbra-sandbox'),
  SANDBOX_TOKEN_TTL_S: z.coerce.number().int().positive().default(7200),
  SAT_DIR: z.string().default(DEFAULT_SAT_DIR),
  /** The PAC's signing certificate; default: the second SAT test CSD. */
  SANDBOX_PAC_CER: z.string().optional(),
  SANDBOX_PAC_KEY: z.string().optional(),
  SANDBOX_PAC_KEY_PASSWORD_FILE: z.string().optional(),
  SANDBOX_RFC_PROV_CERTIF: z.string().default('SPR190613I52'),
  /** Cancellations of CFDIs with a Total above this need the receptor's acceptance. */
  SANDBOX_CANCEL_ACCEPTANCE_ABOVE: z.coerce.number().nonnegative().default(5000),
  /** How long a cancellation that needs acceptance stays "En proceso" before it is accepted. */
  SANDBOX_CANCEL_ACCEPT_DELAY_MS: z.coerce.number().int().nonnegative().default(2000),
  /** When set, state (ledger, customids) is saved to this file and loaded at start. */
  SANDBOX_STATE_FILE: z.string().optional(),
  /**
   * What every PAC instance validates before stamping, as a real PAC does: \`on\` (the SAT's XSD and
   * rules), \`rules\` (rules only), \`off\` (sello, certificate and dates only). Per instance at run
   * time: \`POST /__admin/validation\`.
   */
  SANDBOX_VALIDATION: z.enum(['on', 'rules', 'off']).default('on'),
  /**
   * A CA certificate (PEM file) the sandbox takes as the SAT's, besides the SAT's own: the tests'
   * CA (test-support test-ca.ts), whose certificates do not expire with the SAT's test CSDs.
   */
  SANDBOX_TRUSTED_CA_FILE: z.string().optional(),
  /**
   * The SAT's lag: Descarga Masiva lists a stamp (and a cancellation) this long after it happened.
   * Real PACs report to the SAT within minutes; a reconciliation waits past it before calling a
   * stamp missing.
   */
  SANDBOX_SAT_LAG_MS: z.coerce.number().int().nonnegative().default(0),
  /** How long a Descarga Masiva request is "En proceso" before it is decided. */
  SANDBOX_DESCARGA_PROCESS_MS: z.coerce.number().int().nonnegative().default(1000),
  /** Seed of the fault-injection random numbers (reproducible runs). */
  SANDBOX_SEED: z.coerce.number().int().default(1),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Every variable the configuration reads (the README's configuration table lists each). */
export const SANDBOX_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type SandboxConfig = z.output<typeof schema>;

/** Reads the sandbox configuration; throws listing every invalid variable. */
export function loadConfig(env: NodeJS.ProcessEnv): SandboxConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid pac-sandbox configuration:\n${problems}`);
  }
  return parsed.data;
}
