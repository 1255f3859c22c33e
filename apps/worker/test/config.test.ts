import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { runEntryPoint } from '@timbra/test-support';
import { loadConfig } from '../src/config.ts';

const base = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' };

describe('configuration profiles', () => {
  it('production (the default) has no PAC credentials and no test emisor: each missing one is named', () => {
    expect(() => loadConfig(base)).toThrow(
      /EMISOR_RFC: required[\s\S]*CSD_CER_PATH, CSD_KEY_PATH[\s\S]*PAC_PRIMARY_KIND: required[\s\S]*PAC_PRIMARY_PASSWORD: required/,
    );
  });

  it('production with a PAC, an emisor and its CSD: the SAT status service is the SAT’s', () => {
    const { config, pacs } = loadConfig({
      ...base,
      EMISOR_RFC: 'AAA010101AAA',
      CSD_CER_PATH: '/c.cer',
      CSD_KEY_PATH: '/c.key',
      CSD_PASSWORD: 'secret',
      PAC_PRIMARY_KIND: 'finkok',
      PAC_PRIMARY_URL: 'https://facturacion.finkok.com',
      PAC_PRIMARY_USER: 'u',
      PAC_PRIMARY_PASSWORD: 'p',
    });
    expect(pacs).toEqual([
      { name: 'primary', kind: 'finkok', url: 'https://facturacion.finkok.com', user: 'u', password: 'p' },
    ]);
    expect(config.SAT_STATUS_URL).toMatch(/^https:\/\/consultaqr\.facturaelectronica\.sat\.gob\.mx\//);
  });

  it("production's test PAC (test organizations' documents) is never a live PAC's address, and has a kind", () => {
    const production = {
      ...base,
      EMISOR_RFC: 'AAA010101AAA',
      CSD_CER_PATH: '/c.cer',
      CSD_KEY_PATH: '/c.key',
      CSD_PASSWORD: 'secret',
      PAC_PRIMARY_KIND: 'sw',
      PAC_PRIMARY_URL: 'https://services.sw.com.mx',
      PAC_PRIMARY_USER: 'u',
      PAC_PRIMARY_PASSWORD: 'p',
    };
    // None: test organizations' documents wait.
    expect(loadConfig(production).testPac).toBeUndefined();
    const test = { PAC_TEST_KIND: 'sw', PAC_TEST_USER: 't', PAC_TEST_PASSWORD: 'tp' };
    expect(() => loadConfig({ ...production, ...test, PAC_TEST_URL: 'https://services.sw.com.mx' })).toThrow(
      /PAC_TEST_URL: a live PAC's address/,
    );
    expect(() => loadConfig({ ...production, PAC_TEST_URL: 'https://services.test.sw.com.mx' })).toThrow(
      /PAC_TEST_KIND: required with PAC_TEST_URL/,
    );
    expect(loadConfig({ ...production, ...test, PAC_TEST_URL: 'https://services.test.sw.com.mx' }).testPac).toEqual({
      name: 'test',
      kind: 'sw',
      url: 'https://services.test.sw.com.mx',
      user: 't',
      password: 'tp',
    });
  });

  it('the sandbox profile, chosen explicitly, is the local sandbox PAC and the SAT test emisor', () => {
    const { config, pacs } = loadConfig({ ...base, TIMBRA_PROFILE: 'sandbox' });
    expect(config).toMatchObject({
      EMISOR_RFC: 'EKU9003173C9',
      SAT_STATUS_URL: expect.stringContaining('127.0.0.1:4010'),
    });
    expect(pacs).toEqual([expect.objectContaining({ name: 'primary', kind: 'sw', url: 'http://127.0.0.1:4010' })]);
    // Its test PAC is the sandbox too, wherever the primary is pointed.
    expect(
      loadConfig({ ...base, TIMBRA_PROFILE: 'sandbox', PAC_PRIMARY_URL: 'http://127.0.0.1:4999' }).testPac,
    ).toEqual(expect.objectContaining({ name: 'test', kind: 'sw', url: 'http://127.0.0.1:4999' }));
  });

  it('emails: SMTP_URL needs EMAIL_FROM, and the logo must be a PNG or JPEG it can read (named, at start-up)', () => {
    const sandbox = { ...base, TIMBRA_PROFILE: 'sandbox' };
    expect(() => loadConfig({ ...sandbox, SMTP_URL: 'smtp://127.0.0.1:2525', EMAIL_FROM: '' })).toThrow(/EMAIL_FROM/);
    expect(() => loadConfig({ ...sandbox, INVOICE_LOGO_FILE: '/nonexistent/logo.png' })).toThrow(
      'INVOICE_LOGO_FILE: cannot read /nonexistent/logo.png (ENOENT)',
    );
    expect(() => loadConfig({ ...sandbox, INVOICE_LOGO_FILE: fileURLToPath(import.meta.url) })).toThrow(
      /INVOICE_LOGO_FILE: .* is not a PNG or JPEG image/,
    );
    // The merchant's colour: #RRGGBB, dark enough for white text on it.
    expect(() => loadConfig({ ...sandbox, INVOICE_COLOR: '#ffd700' })).toThrow(/INVOICE_COLOR: too light/);
    expect(() => loadConfig({ ...sandbox, INVOICE_COLOR: 'navy' })).toThrow(/INVOICE_COLOR: a colour as #RRGGBB/);
    expect(loadConfig({ ...sandbox, INVOICE_COLOR: '#12355B' }).config.INVOICE_COLOR).toBe('#12355b');
    // The sandbox sends from a test address; SMTP_URL comes from a file like every secret.
    expect(loadConfig(sandbox).config.EMAIL_FROM).toBe('Facturación <facturas@timbra.test>');
  });

  it('a renamed setting is named with its new name: DELIVERY_BATCH_SIZE is DELIVERY_CONCURRENCY', () => {
    const sandbox = { ...base, TIMBRA_PROFILE: 'sandbox' };
    expect(() => loadConfig({ ...sandbox, DELIVERY_BATCH_SIZE: '50' })).toThrow(
      /DELIVERY_BATCH_SIZE: renamed DELIVERY_CONCURRENCY/,
    );
    expect(loadConfig({ ...sandbox, DELIVERY_CONCURRENCY: '50' }).config.DELIVERY_CONCURRENCY).toBe(50);
  });

  it('a production start without them exits 1 with the list as one JSON line, no stack trace', () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const run = runEntryPoint(main, { ...base, PAC_PRIMARY_PASSWORD: 'do-not-print-me' });
    expect(run.status).toBe(1);
    const line = JSON.parse(run.stdout.trim()) as { level: number; msg: string; problems: string[] };
    expect(line).toMatchObject({ level: 60, msg: 'invalid worker configuration:' });
    expect(line.problems.length).toBeGreaterThan(0);
    expect(run.stdout + run.stderr).not.toMatch(/\bat .+\.(ts|js):\d+/);
    expect(run.stdout + run.stderr).not.toContain('do-not-print-me');
  });
});
