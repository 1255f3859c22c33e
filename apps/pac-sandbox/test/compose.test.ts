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
describe('docker-compose.yml: the pac-sandbox service', () => {
  const compose = parse(readFileSync(new URL('docker-compose.yml', root), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const service = compose.services['pac-sandbox']!;

  it('sets an environment the real configuration parser accepts', () => {
    expect(() => loadConfig({ ...service.environment })).not.toThrow();
  });

  it('runs a file this workspace builds (dist/main.js from src/main.ts), the same as its start script', () => {
    expect(service.command).toEqual(['node', 'apps/pac-sandbox/dist/main.js']);
    expect(existsSync(new URL('apps/pac-sandbox/src/main.ts', root))).toBe(true);
    const pkg = JSON.parse(readFileSync(new URL('apps/pac-sandbox/package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node dist/main.js');
  });
});
