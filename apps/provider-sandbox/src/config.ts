import { z } from 'zod';

const schema = z.object({
  PROVIDER_SANDBOX_HOST: z.string().default('127.0.0.1'),
  PROVIDER_SANDBOX_PORT: z.coerce.number().int().min(0).max(65535).default(4020),
  /** The key Stripe API callers must present (`Authorization: Bearer …`): Timbra's STRIPE_API_KEY. */
  PROVIDER_SANDBOX_STRIPE_SECRET_KEY: z.string().min(1).default('sk_test_timbra_sandbox'),
  /** Where Stripe events are POSTed (Timbra's `/webhooks/stripe`); unset: events are held. */
  PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL: z.string().url().optional(),
  /** The endpoint secret events are signed with: Timbra's STRIPE_WEBHOOK_SECRET. */
  PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET: z.string().min(1).default('whsec_dev_local_only'),
  /** The live secret key: live-mode payments are read with it only (unset: every object with the secret key). */
  PROVIDER_SANDBOX_STRIPE_LIVE_SECRET_KEY: z.string().min(1).optional(),
  /** Where connected accounts' events are POSTed (Timbra's `/webhooks/stripe/connect`); unset: held. */
  PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_URL: z.string().url().optional(),
  /** The Connect endpoint's secret: Timbra's STRIPE_CONNECT_WEBHOOK_SECRET. */
  PROVIDER_SANDBOX_STRIPE_CONNECT_WEBHOOK_SECRET: z.string().min(1).default('whsec_connect_dev_local_only'),
  /** The token Mercado Pago API callers must present: Timbra's MERCADOPAGO_ACCESS_TOKEN. */
  PROVIDER_SANDBOX_MP_ACCESS_TOKEN: z.string().min(1).default('TEST-timbra-sandbox-token'),
  /** Where Mercado Pago notifications are POSTed (Timbra's `/webhooks/mercadopago`); unset: held. */
  PROVIDER_SANDBOX_MP_WEBHOOK_URL: z.string().url().optional(),
  /** The secret notifications are signed with: Timbra's MERCADOPAGO_WEBHOOK_SECRET. */
  PROVIDER_SANDBOX_MP_WEBHOOK_SECRET: z.string().min(1).default('mp_dev_local_only'),
  /** The token Banxico SIE callers must send (`Bmx-Token`): Timbra's BANXICO_TOKEN. */
  PROVIDER_SANDBOX_BANXICO_TOKEN: z.string().min(1).default('banxico-sandbox-token'),
  /** Waits between a failed delivery and its retries, comma-separated milliseconds. */
  PROVIDER_SANDBOX_RETRY_DELAYS_MS: z
    .string()
    .regex(/^\d+(,\d+)*$/)
    .default('250,1000,3000,10000,30000'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Every variable the provider sandbox reads (its README lists each). */
export const PROVIDER_SANDBOX_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type ProviderSandboxConfig = z.output<typeof schema>;

export function loadConfig(env: NodeJS.ProcessEnv): ProviderSandboxConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid provider-sandbox configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`,
    );
  return parsed.data;
}
