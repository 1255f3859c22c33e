import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { SECRET_SETTINGS } from '@timbra/settings';
import { composeEnvironment, composeFile, composeSecret } from '@timbra/test-support';
import { loadConfig } from '../src/config.ts';

const root = new URL('../../../', import.meta.url);
const compose = composeFile();

// No Docker engine on the build machines: the compose file is checked by what can be checked here.
describe('docker-compose.yml: the worker service', () => {
  const service = compose.services['worker']!;

  it('sets an environment the real configuration parser accepts, its secrets read from their files', () => {
    const { config, pacs } = loadConfig(composeEnvironment(compose, 'worker'));
    expect(pacs.map((p) => [p.name, p.password])).toEqual([
      ['primary', composeSecret(compose, 'pac_password')],
      ['backup', composeSecret(compose, 'pac_password')],
    ]);
    expect(config.CSD_PASSWORD).toBe(readFileSync(new URL('sat/csd/EKU9003173C9.password.txt', root), 'utf8').trim());
    expect(config.WORKER_HTTP_HOST).toBe('0.0.0.0');
    expect(service.healthcheck!.test).toEqual([
      'CMD',
      'node',
      'scripts/healthcheck.mjs',
      `http://127.0.0.1:${config.WORKER_HTTP_PORT}/readyz`,
    ]);
  });

  it('holds no secret in a plain variable', () => {
    // A URL without a password (the compose Redis) is not a secret; anything else on the list is.
    const plain = (env: Record<string, string>) =>
      SECRET_SETTINGS.filter((name) => name in env && !(name === 'REDIS_URL' && !new URL(env[name]!).password));
    expect(plain(service.environment!)).toEqual([]);
  });

  it('runs a file this workspace builds (dist/main.js from src/main.ts), the same as its start script', () => {
    expect(service.command).toEqual(['node', 'apps/worker/dist/main.js']);
    expect(existsSync(new URL('apps/worker/src/main.ts', root))).toBe(true);
    const pkg = JSON.parse(readFileSync(new URL('apps/worker/package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node dist/main.js');
  });
});
