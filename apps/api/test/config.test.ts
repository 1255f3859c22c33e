import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { runEntryPoint } from '@timbra/test-support';
import { loadConfig } from '../src/config.ts';

const base = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' };

describe('configuration profiles', () => {
  it('production (the default) has no test emisor: the emisor and its CSD are required, each named', () => {
    expect(() => loadConfig(base)).toThrow(
      /EMISOR_RFC: required[\s\S]*EMISOR_NOMBRE: required[\s\S]*CSD_CER_PATH, CSD_KEY_PATH[\s\S]*CSD_PASSWORD or CSD_PASSWORD_FILE[\s\S]*TIMBRA_PROFILE=sandbox/,
    );
  });

  it('production refuses the SAT test RFC (its CFDIs are never valid)', () => {
    expect(() =>
      loadConfig({
        ...base,
        EMISOR_RFC: 'EKU9003173C9',
        EMISOR_NOMBRE: 'ESCUELA KEMPER URGATE',
        EMISOR_REGIMEN_FISCAL: '601',
        EMISOR_LUGAR_EXPEDICION: '42501',
        CSD_CER_PATH: '/c.cer',
        CSD_KEY_PATH: '/c.key',
        CSD_PASSWORD_FILE: '/p',
      }),
    ).toThrow(/EMISOR_RFC: EKU9003173C9 is a SAT test RFC/);
  });

  it('production with a real emisor and its CSD starts', () => {
    const config = loadConfig({
      ...base,
      EMISOR_RFC: 'AAA010101AAA',
      EMISOR_NOMBRE: 'EMPRESA',
      EMISOR_REGIMEN_FISCAL: '601',
      EMISOR_LUGAR_EXPEDICION: '01000',
      CSD_CER_PATH: '/c.cer',
      CSD_KEY_PATH: '/c.key',
      CSD_PASSWORD: 'secret',
    });
    expect(config).toMatchObject({ TIMBRA_PROFILE: 'production', EMISOR_RFC: 'AAA010101AAA' });
  });

  it('the sandbox profile, chosen explicitly, is the SAT test emisor', () => {
    expect(loadConfig({ ...base, TIMBRA_PROFILE: 'sandbox' })).toMatchObject({
      TIMBRA_PROFILE: 'sandbox',
      EMISOR_RFC: 'EKU9003173C9',
      EMISOR_LUGAR_EXPEDICION: '42501',
    });
  });

  it('a production start without them exits 1 with the list, no stack trace, no secret', () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const run = runEntryPoint(main, { ...base, CSD_PASSWORD: 'do-not-print-me' });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^invalid api configuration:\n {2}EMISOR_RFC: required/);
    expect(run.stderr).not.toMatch(/\bat .+\.(ts|js):\d+/);
    expect(run.stderr).not.toContain('do-not-print-me');
  });
});
