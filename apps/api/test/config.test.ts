import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { eventually, freePort, privateRedisArgs, runEntryPoint, realClockEnv, testCaFile } from '@timbra/test-support';
import { Redis } from 'ioredis';
import { periodicidadFor } from '@timbra/cfdi-core';
import { loadConfig } from '../src/config.ts';
import { mesesFor } from '../src/payments/build-ingreso.ts';

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

  it('production with the vault’s keys needs no CSD files (the stored CSD is checked at start)', () => {
    const emisor = {
      ...base,
      EMISOR_RFC: 'AAA010101AAA',
      EMISOR_NOMBRE: 'EMPRESA',
      EMISOR_REGIMEN_FISCAL: '601',
      EMISOR_LUGAR_EXPEDICION: '01000',
    };
    expect(() => loadConfig(emisor)).toThrow(/CSD_CER_PATH, CSD_KEY_PATH: the emisor's CSD is required/);
    const dir = mkdtempSync(join(tmpdir(), 'timbra-vault-'));
    try {
      writeFileSync(join(dir, 'keys'), `2026-12:${Buffer.alloc(32, 7).toString('base64')}\n`);
      const config = loadConfig({ ...emisor, VAULT_KEYS_FILE: join(dir, 'keys') });
      expect(config.VAULT_KEYS).toMatch(/^2026-12:/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the SAT's CAs an uploaded CSD must chain to, and names a file that is not one", () => {
    const sandbox = { ...base, TIMBRA_PROFILE: 'sandbox' };
    expect(loadConfig(sandbox).trustedCas).toBeUndefined();
    const config = loadConfig({ ...sandbox, CSD_TRUSTED_CAS_FILE: testCaFile() });
    expect(config.trustedCas?.map((c) => c.subject)).toEqual([expect.stringContaining('Timbra test CA')]);
    const dir = mkdtempSync(join(tmpdir(), 'timbra-cas-'));
    try {
      writeFileSync(join(dir, 'cas.pem'), 'not a certificate');
      expect(() => loadConfig({ ...sandbox, CSD_TRUSTED_CAS_FILE: join(dir, 'cas.pem') })).toThrow(
        /CSD_TRUSTED_CAS_FILE: the trusted CAs are not PEM or DER certificates/,
      );
      expect(() => loadConfig({ ...sandbox, CSD_TRUSTED_CAS_FILE: join(dir, 'missing.pem') })).toThrow(
        /CSD_TRUSTED_CAS_FILE: ENOENT/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the sandbox profile, chosen explicitly, is the SAT test emisor', () => {
    expect(loadConfig({ ...base, TIMBRA_PROFILE: 'sandbox' })).toMatchObject({
      TIMBRA_PROFILE: 'sandbox',
      EMISOR_RFC: 'EKU9003173C9',
      EMISOR_LUGAR_EXPEDICION: '42501',
    });
  });

  it("Stripe Connect needs the platform's key and platform mode; its settings are read together", () => {
    const sandbox = { ...base, TIMBRA_PROFILE: 'sandbox', STRIPE_CONNECT_WEBHOOK_SECRET: 'whsec_connect' };
    expect(() => loadConfig(sandbox)).toThrow(/STRIPE_CONNECT_API_KEY: required[\s\S]*PLATFORM_KEY: required/);
    const on = loadConfig({
      ...sandbox,
      STRIPE_CONNECT_API_KEY: 'sk_live_x',
      PLATFORM_KEY: 'tk_platform_0123456789abcdef0123456789',
    });
    expect(on.connect).toEqual({
      webhookSecret: 'whsec_connect',
      apiKey: 'sk_live_x',
      testApiKey: undefined,
      toleranceSeconds: 300,
    });
    expect(loadConfig({ ...base, TIMBRA_PROFILE: 'sandbox' }).connect).toBeUndefined();
  });

  it('a production start without them exits 1 with the list as one JSON line, no stack trace, no secret', () => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const run = runEntryPoint(main, { ...base, CSD_PASSWORD: 'do-not-print-me' });
    expect(run.status).toBe(1);
    // One JSON line (level fatal): the title and the list.
    const line = JSON.parse(run.stdout.trim()) as { level: number; msg: string; problems: string[] };
    expect(line).toMatchObject({ level: 60, msg: 'invalid api configuration:' });
    expect(line.problems[0]).toMatch(/^EMISOR_RFC: required/);
    expect(run.stdout + run.stderr).not.toMatch(/\bat .+\.(ts|js):\d+/);
    expect(run.stdout + run.stderr).not.toContain('do-not-print-me');
  });
});

describe('the API at start-up', () => {
  it('refuses a Redis that may evict (one JSON line, exit 1), and warns of each webhook without its secret', async () => {
    const port = await freePort();
    const redis = spawn('redis-server', privateRedisArgs(port, 'allkeys-lru'), {
      stdio: 'ignore',
      env: realClockEnv(),
    });
    try {
      await eventually(async () => {
        const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null });
        probe.on('error', () => undefined);
        const up = await probe.connect().then(
          () => true,
          () => false,
        );
        probe.disconnect();
        return up;
      }, 10_000);
      const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
      const run = runEntryPoint(main, {
        ...base,
        TIMBRA_PROFILE: 'sandbox',
        REDIS_URL: `redis://127.0.0.1:${port}`,
        PORT: '0',
        METRICS_PORT: '0',
      });
      expect(run.status).toBe(1);
      const lines = run.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { level: number; msg: string; provider?: string });
      expect(lines.filter((l) => l.level === 40 && l.provider).map((l) => l.provider)).toEqual([
        'stripe',
        'mercadopago',
      ]);
      expect(lines.at(-1)).toMatchObject({
        level: 60,
        msg: expect.stringMatching(/maxmemory-policy must be noeviction/),
      });
    } finally {
      redis.kill('SIGKILL');
    }
  });
});

describe('fiscal settings are checked against the SAT catalogues at start-up', () => {
  const sandbox = { ...base, TIMBRA_PROFILE: 'sandbox' };

  it('starts with the defaults (ACT, 01010101, Periodicidad 01 for régimen 601)', () => {
    expect(() => loadConfig(sandbox)).not.toThrow();
  });

  it.each([
    ['EMISOR_REGIMEN_FISCAL', '699', /EMISOR_REGIMEN_FISCAL '699': CFDI40140: /],
    ['EMISOR_REGIMEN_FISCAL', '612', /EMISOR_REGIMEN_FISCAL '612': CFDI40141: .*persona/],
    ['EMISOR_LUGAR_EXPEDICION', 'ABCDE', /EMISOR_LUGAR_EXPEDICION/],
    ['CONCEPTO_CLAVE_PROD_SERV', '0101', /CONCEPTO_CLAVE_PROD_SERV/],
    ['CONCEPTO_CLAVE_PROD_SERV', '00000000', /CONCEPTO_CLAVE_PROD_SERV '00000000': CFDI40162: /],
    ['CONCEPTO_CLAVE_UNIDAD', 'ACTT', /CONCEPTO_CLAVE_UNIDAD 'ACTT'/],
    ['CONCEPTO_CLAVE_UNIDAD', 'QQQ', /CONCEPTO_CLAVE_UNIDAD 'QQQ': CFDI40165: /],
    ['PUBLICO_GENERAL_PERIODICIDAD', '05', /PUBLICO_GENERAL_PERIODICIDAD '05': CFDI40132: /],
    ['SERIE_INGRESO', 'A|B', /SERIE_INGRESO, SERIE_EGRESO, SERIE_PAGO: serie 'A\|B' must not contain '\|'/],
    [
      'SERIE_EGRESO',
      'N'.repeat(26),
      /SERIE_INGRESO, SERIE_EGRESO, SERIE_PAGO: serie 'N+' must have 1 to 25 characters/,
    ],
  ])('refuses %s=%s, naming it', (name, value, message) => {
    expect(() => loadConfig({ ...sandbox, [name]: value })).toThrow(message);
  });

  it('with the operator’s c_ClaveProdServ and c_CodigoPostal files, the settings are checked against them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-cat-'));
    try {
      const claves = join(dir, 'c_ClaveProdServ.csv');
      const codigos = join(dir, 'c_CodigoPostal.csv');
      writeFileSync(claves, 'c_ClaveProdServ,Descripción\n01010101,No existe en el catálogo\n86121503,Colegiaturas\n');
      writeFileSync(codigos, '"c_CodigoPostal";"c_Estado"\n"42501";"HID"\n"01000";"CMX"\n');
      const files = { ...sandbox, SAT_CLAVE_PROD_SERV_FILE: claves, SAT_CODIGO_POSTAL_FILE: codigos };
      expect(() => loadConfig(files)).not.toThrow();
      expect(() => loadConfig({ ...files, CONCEPTO_CLAVE_PROD_SERV: '43211503' })).toThrow(
        /CONCEPTO_CLAVE_PROD_SERV '43211503': CFDI40162: /,
      );
      expect(() => loadConfig({ ...files, EMISOR_LUGAR_EXPEDICION: '64000' })).toThrow(
        /EMISOR_LUGAR_EXPEDICION '64000': CFDI40126: /,
      );
      expect(() => loadConfig({ ...files, SAT_CODIGO_POSTAL_FILE: join(dir, 'missing.csv') })).toThrow(
        /SAT_CODIGO_POSTAL_FILE: cannot read the catalogue/,
      );
    } finally {
      loadConfig(sandbox); // back to shape checks for the other tests of this file
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('H87 (pieza) and E48 (unidad de servicio) are fine units', () => {
    for (const unit of ['H87', 'E48'])
      expect(() => loadConfig({ ...sandbox, CONCEPTO_CLAVE_UNIDAD: unit })).not.toThrow();
  });
});

describe('InformacionGlobal', () => {
  it('Meses is the month, or the bimester (13–18) with Periodicidad 05', () => {
    expect(mesesFor('01', '2026-11-30T10:00:00')).toBe('11');
    expect(mesesFor('04', '2026-01-05T10:00:00')).toBe('01');
    expect(mesesFor('05', '2026-01-05T10:00:00')).toBe('13');
    expect(mesesFor('05', '2026-02-28T10:00:00')).toBe('13');
    expect(mesesFor('05', '2026-11-30T10:00:00')).toBe('18');
  });

  it('Periodicidad defaults to the régimen’s: 05 for 621, else 01', () => {
    expect(periodicidadFor('621', undefined)).toBe('05');
    expect(periodicidadFor('601', undefined)).toBe('01');
    expect(periodicidadFor('612', '04')).toBe('04');
  });
});
