import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { SECRET_SETTINGS } from '@timbra/settings';
import { composeEnvironment, composeFile, composeSecret, testCaPem, testCsdFiles } from '@timbra/test-support';
import { loadConfig, parseApiKeys } from '../src/config.ts';

const root = new URL('../../../', import.meta.url);
const compose = composeFile();

// No Docker engine on the build machines: the compose file is checked by what can be checked here.
describe('docker-compose.yml: the api service', () => {
  const service = compose.services['api']!;

  it('sets an environment the real configuration parser accepts, its secrets read from their files', () => {
    const config = loadConfig(composeEnvironment(compose, 'api'));
    expect(parseApiKeys(config.API_KEYS).map((k) => k.name)).toEqual(['demo']);
    expect(config.STRIPE_WEBHOOK_SECRET).toBe(composeSecret(compose, 'stripe_webhook_secret'));
    expect(config.DASHBOARD_PASSWORD).toBe(composeSecret(compose, 'dashboard_password'));
    expect(config.CSD_CER_PATH).toMatch(/deploy\/sandbox-csd\/EKU9003173C9\.cer$/);
    // Metrics and the public port apart; metrics on the compose network only (no published port).
    expect(config.METRICS_HOST).toBe('0.0.0.0');
    expect((service as { ports?: string[] }).ports).toEqual(['127.0.0.1:3000:3000']);
  });

  it('holds no secret in a plain variable: each comes from a file (compose secrets)', () => {
    const env = service.environment!;
    // A URL without a password (the compose Redis) is not a secret; anything else on the list is.
    const plain = (env: Record<string, string>) =>
      SECRET_SETTINGS.filter((name) => name in env && !(name === 'REDIS_URL' && !new URL(env[name]!).password));
    expect(plain(env)).toEqual([]);
    for (const [name, value] of Object.entries(env).filter(([n]) => n.endsWith('_FILE') || n.startsWith('CSD_')))
      expect({ name, mounted: service.secrets!.includes(value.replace('/run/secrets/', '')) }).toEqual({
        name,
        mounted: true,
      });
  });

  it('a secret the service is not given makes the app refuse to start, naming the setting, not the value', () => {
    const env = composeEnvironment({ ...compose, services: { api: { ...service, secrets: [] } } }, 'api');
    expect(() => loadConfig(env)).toThrow(/DATABASE_URL_FILE: cannot read \/run\/secrets\/database_url/);
  });

  it('runs the production image, with a healthcheck on its /readyz', () => {
    expect(service.build).toEqual({ context: '.', target: 'production' });
    expect(service.healthcheck!.test).toEqual([
      'CMD',
      'node',
      'scripts/healthcheck.mjs',
      'http://127.0.0.1:3000/readyz',
    ]);
  });

  it('runs a file this workspace builds (dist/main.js from src/main.ts), the same as its start script', () => {
    expect(service.command).toEqual(['node', 'apps/api/dist/main.js']);
    expect(existsSync(new URL('apps/api/src/main.ts', root))).toBe(true);
    const pkg = JSON.parse(readFileSync(new URL('apps/api/package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node dist/main.js');
  });
});

describe('docker-compose.yml: the whole file', () => {
  it('has Postgres, Redis (noeviction), a one-shot migration, the sandbox, the API and the worker, wired by health', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'demo',
      'migrate',
      'pac-sandbox',
      'postgres',
      'provider-sandbox',
      'redis',
      'worker',
    ]);
    expect(compose.services.redis!.command).toEqual(
      expect.arrayContaining(['--maxmemory-policy', 'noeviction', '--appendonly', 'yes']),
    );
    expect(compose.services.migrate!.command).toEqual(['node', 'packages/db/dist/cli/migrate-cli.js']);
    expect(compose.services.migrate!.environment).toEqual({ DATABASE_URL_FILE: '/run/secrets/database_url' });
    expect(existsSync(new URL('packages/db/src/cli/migrate-cli.ts', root))).toBe(true);
    for (const name of ['api', 'worker']) {
      expect(compose.services[name]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
      });
    }
  });

  it('gives every long-running service a healthcheck, and every secret a file that exists', () => {
    for (const [name, service] of Object.entries(compose.services))
      if (name !== 'migrate' && name !== 'demo')
        expect({ name, healthcheck: Boolean(service.healthcheck?.test) }).toEqual({ name, healthcheck: true });
    // The one-shot containers run the images whose HEALTHCHECK probes the API: they turn it off, or
    // they would be reported unhealthy for doing their job.
    for (const name of ['migrate', 'demo'])
      expect({ name, healthcheck: compose.services[name]!.healthcheck }).toEqual({
        name,
        healthcheck: { disable: true },
      });
    for (const [name, secret] of Object.entries(compose.secrets))
      expect({ name, exists: existsSync(new URL(secret.file, root)) }).toEqual({ name, exists: true });
    // The database's password and the URL the apps use agree.
    expect(composeSecret(compose, 'database_url')).toContain(`:${composeSecret(compose, 'postgres_password')}@`);
  });

  it('runs the sandboxes and the demo on the sandbox image, the apps on the production image', () => {
    for (const name of ['pac-sandbox', 'provider-sandbox', 'demo'])
      expect(compose.services[name]!.build).toEqual({ context: '.', target: 'sandbox' });
    for (const name of ['api', 'worker', 'migrate'])
      expect(compose.services[name]!.build).toEqual({ context: '.', target: 'production' });
    const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
    expect(dockerfile).toMatch(/^FROM .* AS sandbox$/m);
    // The default target (the last stage) is production, and leaves the sandboxes and test CSDs out.
    expect(
      dockerfile
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('FROM '))
        .at(-1),
    ).toMatch(/ AS production$/);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*scripts\/healthcheck\.mjs/m);
    const prodTree = /RUN mkdir -p \/prod[\s\S]*?\n\n/.exec(dockerfile)![0];
    expect(prodTree).not.toMatch(/cp -a [^\n]*(apps\/pac-sandbox|apps\/provider-sandbox|sat\/csd)/);
    expect(prodTree).toMatch(/rm -rf \/prod\/node_modules\/@timbra\/pac-sandbox/);
  });

  it('has a provider sandbox whose secrets, keys and webhook URLs are the api service’s', () => {
    const providers = compose.services['provider-sandbox']!.environment!;
    const api = loadConfig(composeEnvironment(compose, 'api'));
    expect(compose.services['provider-sandbox']!.command).toEqual(['node', 'apps/provider-sandbox/dist/main.js']);
    expect(existsSync(new URL('apps/provider-sandbox/src/main.ts', root))).toBe(true);
    expect(providers).toMatchObject({
      PROVIDER_SANDBOX_STRIPE_SECRET_KEY: api.STRIPE_API_KEY,
      PROVIDER_SANDBOX_STRIPE_WEBHOOK_SECRET: api.STRIPE_WEBHOOK_SECRET,
      PROVIDER_SANDBOX_STRIPE_WEBHOOK_URL: `http://api:${api.PORT}/webhooks/stripe`,
      PROVIDER_SANDBOX_MP_ACCESS_TOKEN: api.MERCADOPAGO_ACCESS_TOKEN,
      PROVIDER_SANDBOX_MP_WEBHOOK_SECRET: api.MERCADOPAGO_WEBHOOK_SECRET,
      PROVIDER_SANDBOX_MP_WEBHOOK_URL: `http://api:${api.PORT}/webhooks/mercadopago`,
    });
    expect(api.STRIPE_API_URL).toBe(`http://provider-sandbox:${providers.PROVIDER_SANDBOX_PORT}`);
    expect(api.MERCADOPAGO_API_URL).toBe(`http://provider-sandbox:${providers.PROVIDER_SANDBOX_PORT}/mercadopago`);
  });

  it('has a demo profile whose client talks to the api service with its key, and to the provider sandbox', () => {
    const demo = compose.services.demo!;
    const api = loadConfig(composeEnvironment(compose, 'api'));
    expect(demo.profiles).toEqual(['demo']);
    expect(demo.command).toEqual(['node', 'scripts/demo/dist/demo-cli.js']);
    expect(existsSync(new URL('scripts/demo/demo-cli.ts', root))).toBe(true);
    expect(demo.environment).toMatchObject({ DEMO_API_URL: 'http://api:3000', DEMO_PROVIDERS_URL: api.STRIPE_API_URL });
    expect(parseApiKeys(api.API_KEYS).map((k) => k.key)).toContain(demo.environment!.DEMO_API_KEY);
  });
});

describe('docker-compose.yml: the sandbox profile’s CSD', () => {
  it('seals with the SAT test emisor’s certificate re-issued until 2099, which its PAC sandbox trusts (the SAT’s own ends 2027-05-18)', () => {
    const cer = readFileSync(new URL(compose.secrets['csd_cer']!.file, root));
    // Drift: the committed files are what scripts/sandbox-csd.ts makes (run it to refresh them).
    expect(cer.equals(testCsdFiles('EKU9003173C9').cer)).toBe(true);
    const ca = readFileSync(new URL(compose.secrets['sandbox_trusted_ca']!.file, root), 'utf8');
    expect(ca).toBe(testCaPem());
    const certificate = new X509Certificate(cer);
    expect(new Date(certificate.validTo).getUTCFullYear()).toBe(2099);
    expect(certificate.checkIssued(new X509Certificate(ca))).toBe(true);
    const sandbox = compose.services['pac-sandbox']!;
    expect(sandbox.environment?.['SANDBOX_TRUSTED_CA_FILE']).toBe('/run/secrets/sandbox_trusted_ca');
    expect(sandbox.secrets).toContain('sandbox_trusted_ca');
  });

  it('keeps customers’ files and the compose secrets out of every image (.dockerignore)', () => {
    const ignored = readFileSync(new URL('.dockerignore', root), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const path of ['.local', 'deploy/secrets', 'node_modules']) expect(ignored).toContain(path);
  });
});
