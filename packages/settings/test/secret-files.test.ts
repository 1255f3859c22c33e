import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SECRET_SETTINGS, withSecretFiles } from '../src/secret-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'timbra-secrets-'));
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

describe('withSecretFiles', () => {
  it('reads each <SECRET>_FILE into <SECRET>, without the final newline', () => {
    const { env, problems } = withSecretFiles({
      API_KEYS_FILE: file('keys', 'pos:k-1\n'),
      CSD_PASSWORD_FILE: file('csd', '12345678a\r\n'),
      DATABASE_URL: 'postgresql://x@y/z',
    });
    expect(problems).toEqual([]);
    expect(env).toMatchObject({ API_KEYS: 'pos:k-1', CSD_PASSWORD: '12345678a', DATABASE_URL: 'postgresql://x@y/z' });
  });

  it('refuses a setting given both ways, and a file it cannot read — naming the setting and the path, never a value', () => {
    const both = withSecretFiles({
      STRIPE_WEBHOOK_SECRET: 'whsec_given',
      STRIPE_WEBHOOK_SECRET_FILE: file('s', 'whsec_file'),
    }).problems;
    expect(both).toEqual([
      '  STRIPE_WEBHOOK_SECRET: set both directly and through STRIPE_WEBHOOK_SECRET_FILE; keep one',
    ]);
    expect(withSecretFiles({ DASHBOARD_PASSWORD_FILE: join(dir, 'missing') }).problems).toEqual([
      expect.stringMatching(/^ {2}DASHBOARD_PASSWORD_FILE: cannot read .*missing \(ENOENT\)$/),
    ]);
  });

  it('leaves other *_FILE settings alone (catalogue files are not secrets)', () => {
    const { env } = withSecretFiles({ SAT_CLAVE_PROD_SERV_FILE: '/nowhere.csv' });
    expect(env).toEqual({ SAT_CLAVE_PROD_SERV_FILE: '/nowhere.csv' });
    expect(SECRET_SETTINGS).not.toContain('SAT_CLAVE_PROD_SERV');
  });
});
