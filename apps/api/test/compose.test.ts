import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { loadConfig } from '../src/config.ts';

const root = new URL('../../../', import.meta.url);

interface ComposeService {
  command: string[];
  environment?: Record<string, string>;
}

// No Docker engine on the build machines: the compose file is checked by what can be checked here.
describe('docker-compose.yml: the api service', () => {
  const compose = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const service = compose.services['api']!;

  it('sets an environment the real configuration parser accepts', () => {
    expect(() => loadConfig({ ...service.environment })).not.toThrow();
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
  const compose = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as {
    services: Record<
      string,
      ComposeService & { depends_on?: Record<string, { condition: string }>; command: string[] }
    >;
  };

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
    expect(existsSync(new URL('packages/db/src/cli/migrate-cli.ts', root))).toBe(true);
    for (const name of ['api', 'worker']) {
      expect(compose.services[name]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
      });
    }
  });

  it('has a provider sandbox whose secrets, keys and webhook URLs are the api service’s', () => {
    const providers = compose.services['provider-sandbox']!.environment!;
    const api = compose.services.api!.environment!;
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
    const demo = compose.services.demo! as ComposeService & { profiles?: string[] };
    const api = compose.services.api!;
    expect(demo.profiles).toEqual(['demo']);
    expect(demo.command).toEqual(['node', 'apps/api/dist/demo/demo-cli.js']);
    expect(existsSync(new URL('apps/api/src/demo/demo-cli.ts', root))).toBe(true);
    expect(demo.environment).toMatchObject({
      DEMO_API_URL: 'http://api:3000',
      DEMO_PROVIDERS_URL: api.environment!.STRIPE_API_URL,
    });
    expect(api.environment!.API_KEYS!.split(',').map((k) => k.split(':')[1])).toContain(demo.environment!.DEMO_API_KEY);
  });
});
