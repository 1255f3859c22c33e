import { apiSettings, withSecretFiles, type ApiSettings } from '@timbra/settings';
import {
  fiscalSettingsProblems,
  productionEmisorProblems,
  readCertificates,
  SANDBOX_EMISOR,
  type OperatorCatalogs,
} from '@timbra/cfdi-core';
import { readFileSync } from 'node:fs';
import type { X509Certificate } from 'node:crypto';
import { catalogsFromSettings, readInvoiceLogo } from '@timbra/cfdi-node';
import { DEFAULT_SCOPES, isScope, SCOPES, type Scope } from '@timbra/db/keys';
import { redisConfigProblems } from '@timbra/db/redis';
import type { ConnectSettings } from './organizations/stripe-connect.ts';

/**
 * The API's settings, and the operator's SAT catalogues read from the files they name
 * (`SAT_CLAVE_PROD_SERV_FILE`, `SAT_CODIGO_POSTAL_FILE`; empty: shape checks), which every run of the
 * SAT rules in the process is given.
 */
export type ApiConfig = ApiSettings & {
  catalogs: OperatorCatalogs;
  trustedCas?: X509Certificate[];
  /** Stripe Connect (STRIPE_CONNECT_*), when on. */
  connect?: ConnectSettings;
};

/** Reads the API configuration from `env`; throws listing every problem. */
export function loadConfig(given: NodeJS.ProcessEnv): ApiConfig {
  // Secrets may come from files (`<NAME>_FILE`, compose `secrets:`): read here, before anything else.
  const { env, problems: fileProblems } = withSecretFiles(given);
  const sandbox = env.TIMBRA_PROFILE === 'sandbox';
  const parsed = apiSettings.safeParse(sandbox ? { ...SANDBOX_EMISOR, ...env } : env);
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
  let trustedCas: X509Certificate[] | undefined;
  if (parsed.success) {
    const c = parsed.data;
    problems.push(...pairedSettingProblems(c));
    if (c.INVOICE_LOGO_FILE) {
      const read = readInvoiceLogo(c.INVOICE_LOGO_FILE);
      if ('problem' in read) problems.push(`  INVOICE_LOGO_FILE: ${read.problem}`);
    }
    if (c.CSD_TRUSTED_CAS_FILE) {
      const read = readTrustedCas(c.CSD_TRUSTED_CAS_FILE);
      if ('problem' in read) problems.push(`  CSD_TRUSTED_CAS_FILE: ${read.problem}`);
      else trustedCas = read.cas;
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
  return { ...parsed.data, catalogs, ...(trustedCas ? { trustedCas } : {}), ...connectOf(parsed.data) };
}

/** Stripe Connect's settings, when on (STRIPE_CONNECT_WEBHOOK_SECRET; the key is checked beside it). */
function connectOf(c: ApiSettings): { connect?: ConnectSettings } {
  if (!c.STRIPE_CONNECT_WEBHOOK_SECRET) return {};
  return {
    connect: {
      webhookSecret: c.STRIPE_CONNECT_WEBHOOK_SECRET,
      apiKey: c.STRIPE_CONNECT_API_KEY!,
      testApiKey: c.STRIPE_CONNECT_TEST_API_KEY,
      toleranceSeconds: c.STRIPE_TOLERANCE_SECONDS,
    },
  };
}

/** Settings that need another with them: each missing one, named. */
function pairedSettingProblems(c: ApiSettings): string[] {
  const problems: string[] = [];
  if (c.STRIPE_WEBHOOK_SECRET && !c.STRIPE_API_KEY)
    problems.push('  STRIPE_API_KEY: required with STRIPE_WEBHOOK_SECRET (refunds and payment methods are fetched)');
  if (c.STRIPE_CONNECT_WEBHOOK_SECRET && !c.STRIPE_CONNECT_API_KEY)
    problems.push(
      "  STRIPE_CONNECT_API_KEY: required with STRIPE_CONNECT_WEBHOOK_SECRET (connected accounts' objects are read)",
    );
  if (c.STRIPE_CONNECT_WEBHOOK_SECRET && !c.PLATFORM_KEY)
    problems.push('  PLATFORM_KEY: required with STRIPE_CONNECT_WEBHOOK_SECRET (Connect routes to organizations)');
  if (c.EXCHANGE_RATE_SOURCE === 'banxico' && !c.BANXICO_TOKEN)
    problems.push('  BANXICO_TOKEN: required with EXCHANGE_RATE_SOURCE=banxico (its SIE API asks for one)');
  if (c.MERCADOPAGO_WEBHOOK_SECRET && !c.MERCADOPAGO_ACCESS_TOKEN)
    problems.push('  MERCADOPAGO_ACCESS_TOKEN: required with MERCADOPAGO_WEBHOOK_SECRET (payments are fetched)');
  return problems;
}

/** The SAT's CA certificates in `path` (a PEM bundle or one DER certificate), or what is wrong with it. */
function readTrustedCas(path: string): { cas: X509Certificate[] } | { problem: string } {
  try {
    return { cas: readCertificates(readFileSync(path)) };
  } catch (error) {
    return { problem: (error as Error).message };
  }
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
