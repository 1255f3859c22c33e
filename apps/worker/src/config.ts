import { productionEmisorProblems, SANDBOX_EMISOR, type OperatorCatalogs } from '@timbra/cfdi-core';
import { catalogsFromSettings, readInvoiceLogo } from '@timbra/cfdi-node';
import { SANDBOX_PAC, withSecretFiles } from '@timbra/settings';
import { redisConfigProblems } from '@timbra/db/redis';
import { schema, type WorkerConfig } from './config-schema.ts';

export { loadOpsConfig, retentionPolicy, type WorkerConfig } from './config-schema.ts';

export interface PacConfig {
  name: 'primary' | 'backup' | 'test';
  kind: 'sw' | 'finkok';
  url: string;
  user: string;
  password: string;
}

/** What the sandbox profile fills in: the local sandbox PAC (its default account) and the SAT test emisor. */
const SANDBOX_DEFAULTS = {
  ...SANDBOX_PAC,
  EMISOR_RFC: SANDBOX_EMISOR.EMISOR_RFC,
  EMAIL_FROM: 'Facturación <facturas@timbra.test>',
};

/**
 * Reads the worker's configuration. In production the primary PAC, the emisor RFC and its CSD are
 * required; the sandbox profile (`TIMBRA_PROFILE=sandbox`) defaults them to the local sandbox PAC and
 * the SAT test CSD. The backup PAC is optional. Throws listing every problem.
 */
export function loadConfig(given: NodeJS.ProcessEnv): {
  config: WorkerConfig;
  pacs: PacConfig[];
  /** PAC_TEST_*: where test organizations' documents are stamped (none: they wait). */
  testPac?: PacConfig;
  /** The operator's SAT catalogues read from SAT_CLAVE_PROD_SERV_FILE / SAT_CODIGO_POSTAL_FILE (empty: shape checks). */
  catalogs: OperatorCatalogs;
} {
  // Secrets may come from files (`<NAME>_FILE`, compose `secrets:`): read here, before anything else.
  const { env, problems: fileProblems } = withSecretFiles(given);
  const sandbox = env.TIMBRA_PROFILE === 'sandbox';
  const parsed = schema.safeParse(sandbox ? { ...SANDBOX_DEFAULTS, ...env } : env);
  const problems = sandbox
    ? [...fileProblems]
    : [
        ...fileProblems,
        ...productionEmisorProblems(env),
        ...['PAC_PRIMARY_KIND', 'PAC_PRIMARY_URL', 'PAC_PRIMARY_USER', 'PAC_PRIMARY_PASSWORD']
          .filter((name) => !env[name])
          .map(
            (name) =>
              `  ${name}: required (TIMBRA_PROFILE=production; TIMBRA_PROFILE=sandbox uses the local sandbox PAC)`,
          ),
      ];
  if (!parsed.success)
    problems.push(
      ...parsed.error.issues
        .filter((i) => sandbox || i.path[0] !== 'EMISOR_RFC' || env.EMISOR_RFC !== undefined)
        .map((i) => `  ${i.path.join('.')}: ${i.message}`),
    );
  let catalogs: OperatorCatalogs = {};
  if (parsed.success) {
    const read = catalogsFromSettings(parsed.data);
    catalogs = read.catalogs;
    problems.push(...read.problems.map((p) => `  ${p}`));
  }
  if (parsed.success && parsed.data.INVOICE_LOGO_FILE) {
    const read = readInvoiceLogo(parsed.data.INVOICE_LOGO_FILE);
    if ('problem' in read) problems.push(`  INVOICE_LOGO_FILE: ${read.problem}`);
  }
  // A setting renamed: a deployment that still sets the old name is told, not silently ignored.
  if (env.DELIVERY_BATCH_SIZE !== undefined)
    problems.push(
      '  DELIVERY_BATCH_SIZE: renamed DELIVERY_CONCURRENCY (deliveries in flight at once per worker, each slot refilled as its send ends)',
    );
  if (parsed.success && parsed.data.SMTP_URL && !parsed.data.EMAIL_FROM)
    problems.push("  EMAIL_FROM: required with SMTP_URL (the From of the customer's emails, `Name <address>`)");
  if (parsed.success)
    problems.push(
      ...redisConfigProblems(parsed.data.REDIS_URL, parsed.data.REDIS_CLUSTER, parsed.data.QUEUE_PREFIX).map(
        (p) => `  ${p}`,
      ),
    );
  if (!sandbox && env.PAC_TEST_URL && !env.PAC_TEST_KIND)
    problems.push('  PAC_TEST_KIND: required with PAC_TEST_URL (sw or finkok)');
  // Test documents never reach a live PAC: in production the test PAC is another address.
  if (!sandbox && env.PAC_TEST_URL && [env.PAC_PRIMARY_URL, env.PAC_BACKUP_URL].includes(env.PAC_TEST_URL))
    problems.push(
      "  PAC_TEST_URL: a live PAC's address (PAC_PRIMARY_URL or PAC_BACKUP_URL): test documents go to a sandbox or a test account only",
    );
  if (problems.length > 0 || !parsed.success) throw new Error(`invalid worker configuration:\n${problems.join('\n')}`);
  const c = parsed.data as WorkerConfig & Record<string, string | undefined>;
  // Each field of a PAC's, else `fallback`'s.
  const pacOf = (name: PacConfig['name'], fallback?: PacConfig): PacConfig | undefined => {
    const p = `PAC_${name.toUpperCase()}`;
    const kind = (c[`${p}_KIND`] as 'sw' | 'finkok' | undefined) ?? fallback?.kind;
    const url = c[`${p}_URL`] ?? fallback?.url;
    const user = c[`${p}_USER`] ?? fallback?.user ?? '';
    const password = c[`${p}_PASSWORD`] ?? fallback?.password ?? '';
    return kind && url ? { name, kind, url, user, password } : undefined;
  };
  const pacs = [pacOf('primary'), pacOf('backup')].filter((p): p is PacConfig => p !== undefined);
  // The sandbox profile's test PAC is, field by field, its primary one: the sandbox.
  const testPac = pacOf('test', sandbox ? pacs[0] : undefined);
  return { config: parsed.data, pacs, ...(testPac ? { testPac } : {}), catalogs };
}
