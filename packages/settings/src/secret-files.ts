import { readFileSync } from 'node:fs';

/**
 * The settings that hold a secret, each of which may instead come from a file named by `<NAME>_FILE`
 * (Docker and Compose `secrets:`, Kubernetes secret volumes): the file's content, without its final
 * newline. Both apps and the ops CLI read their environment through `withSecretFiles`.
 */
export const SECRET_SETTINGS = [
  'DATABASE_URL',
  'REDIS_URL',
  'API_KEYS',
  'DASHBOARD_PASSWORD',
  'CONSOLE_SECRET',
  'STRIPE_WEBHOOK_SECRET',
  'STRIPE_API_KEY',
  'STRIPE_CONNECT_WEBHOOK_SECRET',
  'STRIPE_CONNECT_API_KEY',
  'STRIPE_CONNECT_TEST_API_KEY',
  'MERCADOPAGO_WEBHOOK_SECRET',
  'MERCADOPAGO_ACCESS_TOKEN',
  'BANXICO_TOKEN',
  'PAC_PRIMARY_PASSWORD',
  'PAC_BACKUP_PASSWORD',
  'PAC_TEST_PASSWORD',
  'SANDBOX_ADMIN_TOKEN',
  'SMTP_URL',
  'ALERT_WEBHOOK_URL',
  'CSD_PASSWORD',
  'VAULT_KEYS',
  'PLATFORM_KEY',
] as const;

/**
 * `env` with each `<SECRET>_FILE` read into `<SECRET>`, and the problems: a setting given both ways,
 * or a file that cannot be read — each naming the setting and the path, never the content. The
 * apps add the problems to their configuration's list.
 */
export function withSecretFiles(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; problems: string[] } {
  const out = { ...env };
  const problems: string[] = [];
  for (const name of SECRET_SETTINGS) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name] !== undefined) {
      problems.push(`  ${name}: set both directly and through ${name}_FILE; keep one`);
      continue;
    }
    try {
      out[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(`  ${name}_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  return { env: out, problems };
}
