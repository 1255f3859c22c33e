import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { testCsdFiles } from '@timbra/test-support';
import { LocalKeyVault, openSecret, sealSecret, VaultError, type SealedSecret } from '../src/index.ts';

const keyLine = (id: string, key = randomBytes(32)) => `${id}:${key.toString('base64')}`;
const eku = testCsdFiles('EKU9003173C9');
const context = 'csd:org-1:csd-1';

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof VaultError) return error.code;
    throw error;
  }
  return undefined;
}

describe('envelope encryption of a CSD key', () => {
  const master = LocalKeyVault.fromFile(`# the deployment's master keys\n${keyLine('2026-12')}\n`);

  it('opens what it sealed, and stores none of its bytes in the clear', async () => {
    const sealed = await sealSecret(master, eku.key, context);
    expect(await openSecret(master, sealed, context)).toEqual(eku.key);
    const stored = JSON.stringify(sealed);
    expect(stored).not.toContain(eku.key.toString('base64').slice(0, 24));
    expect(sealed.keyId).toBe('2026-12');
  });

  it('seals each secret under its own data key: the same bytes twice are two ciphertexts', async () => {
    const a = await sealSecret(master, eku.key, context);
    const b = await sealSecret(master, eku.key, context);
    expect(a.wrappedKey).not.toBe(b.wrappedKey);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('fails closed with another master key under the same id', async () => {
    const sealed = await sealSecret(master, eku.key, context);
    const impostor = LocalKeyVault.fromFile(keyLine('2026-12'));
    expect(await codeOf(openSecret(impostor, sealed, context))).toBe('vault_cannot_open');
  });

  it('fails closed when the vault does not hold the key that wrapped it', async () => {
    const sealed = await sealSecret(master, eku.key, context);
    expect(await codeOf(openSecret(LocalKeyVault.fromFile(keyLine('2027-01')), sealed, context))).toBe(
      'vault_unknown_key',
    );
  });

  it('does not open under another context: a sealed secret copied to another organization stays shut', async () => {
    const sealed = await sealSecret(master, eku.key, context);
    expect(await codeOf(openSecret(master, sealed, 'csd:org-2:csd-1'))).toBe('vault_cannot_open');
  });

  it.each<[string, (s: SealedSecret) => SealedSecret]>([
    ['a changed ciphertext byte', (s) => ({ ...s, ciphertext: flip(s.ciphertext) })],
    ['a changed wrapped key', (s) => ({ ...s, wrappedKey: flip(s.wrappedKey) })],
    ['a shortened tag', (s) => ({ ...s, tag: Buffer.from(s.tag, 'base64').subarray(0, 4).toString('base64') })],
    ['another format', (s) => ({ ...s, v: 2 as 1 })],
  ])('refuses %s', async (_what, change) => {
    const sealed = await sealSecret(master, eku.key, context);
    expect(await codeOf(openSecret(master, change(sealed), context))).toBe('vault_cannot_open');
  });

  it('rotates: a new master key seals, the old one still opens what it sealed', async () => {
    const oldKey = randomBytes(32);
    const before = LocalKeyVault.fromFile(keyLine('old', oldKey));
    const sealedBefore = await sealSecret(before, eku.key, context);
    const after = LocalKeyVault.fromFile(`${keyLine('new')}\n${keyLine('old', oldKey)}`);
    expect(await openSecret(after, sealedBefore, context)).toEqual(eku.key);
    expect((await sealSecret(after, eku.key, context)).keyId).toBe('new');
  });

  it.each([
    ['an empty file', ''],
    ['a key of 16 bytes', `k:${randomBytes(16).toString('base64')}`],
    ['a line without an id', randomBytes(32).toString('base64')],
    ['two keys with one id', `${keyLine('a')}\n${keyLine('a')}`],
  ])('refuses a master key file with %s, naming no key bytes', (_what, file) => {
    let error: unknown;
    try {
      LocalKeyVault.fromFile(file);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(VaultError);
    expect((error as VaultError).code).toBe('vault_bad_master_key');
    for (const line of file.split('\n')) {
      const secret = line.slice(line.indexOf(':') + 1);
      if (secret.length > 8) expect((error as Error).message).not.toContain(secret.slice(0, 8));
    }
  });
});

function flip(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[bytes.length - 1]! ^= 1;
  return bytes.toString('base64');
}
