/**
 * `npm run ops -- csd:upload | csd:list`, and the API sealing with the stored CSD: a renewed CSD
 * (another NoCertificado, issued by the tests' CA) uploaded with the vault's master key is the one
 * the next API seals with; under another master key the API refuses to start, and says why without
 * a secret. Bad files and a missing vault store nothing.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import {
  certificateVariant,
  eventually,
  freePort,
  stableTempFile,
  testCaFile,
  testCsdFiles,
  testCsdPaths,
  tsEntryArgs,
} from '@timbra/test-support';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { ensureEmisor } from '@timbra/db/invoices';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { opsHere, startApiProcess, startWorkerProcess } from './helpers.ts';

const here = dirname(fileURLToPath(import.meta.url));
const RENEWED = '30001000000500009999';
const dir = mkdtempSync(join(tmpdir(), 'timbra-csd-cli-'));
const keyFile = (name: string) => {
  const path = join(dir, name);
  writeFileSync(path, `2026-12:${randomBytes(32).toString('base64')}\n`);
  return path;
};
const vaultKeys = keyFile('master.keys');
const eku = testCsdPaths('EKU9003173C9');
const renewedCer = stableTempFile(
  `${RENEWED}.cer`,
  certificateVariant(testCsdFiles('EKU9003173C9').cer, { noCertificado: RENEWED }),
);
const upload = (extra: string[] = [], env: Record<string, string> = { VAULT_KEYS_FILE: vaultKeys }) =>
  opsHere(db.url, ['csd:upload', '--key', eku.key, '--password-file', eku.passwordFile, ...extra], {
    EMISOR_RFC: 'EKU9003173C9',
    ...env,
  });

let db: TestDatabase;
let prisma: PrismaClient;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 2 });
  await ensureEmisor(prisma, {
    rfc: 'EKU9003173C9',
    nombre: 'ESCUELA KEMPER URGATE',
    regimenFiscal: '601',
    lugarExpedicion: '42501',
  });
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

describe('ops csd:upload and csd:list', () => {
  it('stores nothing without the vault, or for files that fail the checks', async () => {
    const noVault = await upload(['--cer', renewedCer], {});
    expect(noVault.status).toBe(3);
    expect(noVault.stderr).toMatch(/VAULT_KEYS is not set/);
    const wrongPassword = join(dir, 'wrong.txt');
    writeFileSync(wrongPassword, 'not-the-password\n');
    const refused = await opsHere(
      db.url,
      ['csd:upload', '--cer', renewedCer, '--key', eku.key, '--password-file', wrongPassword],
      { EMISOR_RFC: 'EKU9003173C9', VAULT_KEYS_FILE: vaultKeys },
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^CSD_WRONG_PASSWORD: /);
    expect(refused.stderr).not.toContain('not-the-password');
    const otherRfc = await upload(['--cer', renewedCer, '--rfc', 'CACX7605101P8']);
    expect(otherRfc.status).toBe(3);
    expect(otherRfc.stderr).toMatch(/no emisor CACX7605101P8/);
    expect(await prisma.csd.count()).toBe(0);
  });

  it('stores a CSD that chains to the trusted CAs, lists it as the one sealing, and refuses it twice', async () => {
    const stored = await upload(['--cer', renewedCer, '--trusted-cas', testCaFile()]);
    expect(stored.stderr).toBe('');
    expect(stored.status).toBe(0);
    expect(stored.stdout).toMatch(new RegExp(`stored CSD ${RENEWED} of EKU9003173C9: valid until 2099`));
    const row = await prisma.csd.findFirstOrThrow();
    expect(row).toMatchObject({ noCertificado: RENEWED, chain: 'verified' });
    expect(JSON.stringify(row.sealed)).not.toContain(testCsdFiles('EKU9003173C9').password);

    const listed = await opsHere(db.url, ['csd:list'], { EMISOR_RFC: 'EKU9003173C9' });
    expect(listed.stdout).toMatch(new RegExp(`^${RENEWED}  SEALING  valid .* to 2099-.* chain verified$`, 'm'));
    expect((await upload(['--cer', renewedCer])).status).toBe(1);
  });

  it('the API seals with the stored CSD, not the files', async () => {
    const key = 'csd-cli-admin-0123456789';
    const api = await startApiProcess(db.url, key, { VAULT_KEYS_FILE: vaultKeys });
    try {
      const created = await got.post(`${api.url}/v1/payments`, {
        json: { externalId: 'csd-1', amount: '116.00', currency: 'MXN', occurredAt: new Date().toISOString() },
        headers: { authorization: `Bearer ${key}` },
        throwHttpErrors: false,
      });
      expect(created.statusCode).toBe(201);
      const invoice = await prisma.invoice.findFirstOrThrow({ where: { kind: 'I' } });
      expect(invoice.frozenXml).toContain(`NoCertificado="${RENEWED}"`);
    } finally {
      await api.stop();
    }
  });

  it('the worker seals and cancels with the stored CSD too', async () => {
    // No stamping happens here: the PAC's address is never called before the worker's first job.
    const sandbox = { primary: 'http://127.0.0.1:9' } as Parameters<typeof startWorkerProcess>[0]['sandbox'];
    const worker = startWorkerProcess(
      { databaseUrl: db.url, sandbox },
      `{csd-cli-${process.pid}}`,
      { VAULT_KEYS_FILE: vaultKeys, LOG_LEVEL: 'info', EMISOR_RFC: 'EKU9003173C9' },
      'pipe',
    );
    let output = '';
    worker.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await eventually(() => Promise.resolve(output.includes('sealing with this CSD')), 20_000);
      const line = JSON.parse(output.split('\n').find((l) => l.includes('sealing with this CSD'))!) as object;
      expect(line).toMatchObject({ noCertificado: RENEWED, source: 'stored' });
    } finally {
      worker.kill('SIGTERM');
      await new Promise((done) => worker.once('exit', done));
    }
  });

  it('an API under another master key stops at start, naming the cause and no secret', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, tsEntryArgs(resolve(here, '../../api/src/main.ts')), {
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        TIMBRA_PROFILE: 'sandbox',
        DATABASE_URL: db.url,
        PORT: String(port),
        METRICS_PORT: '0',
        API_KEYS: 'pos:csd-cli-admin-0123456789:admin',
        VAULT_KEYS_FILE: keyFile('impostor.keys'),
        CSD_CER_PATH: eku.cer,
        CSD_KEY_PATH: eku.key,
        CSD_PASSWORD_FILE: eku.passwordFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    expect(code).toBe(1);
    expect(output).toMatch(/the stored CSD does not open under VAULT_KEYS/);
    expect(output).toMatch(/vault_cannot_open/);
    expect(output).not.toContain(testCsdFiles('EKU9003173C9').password);
  });
});
