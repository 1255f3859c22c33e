/**
 * Envelope encryption for the secrets Timbra keeps in Postgres (an organization's CSD key and its
 * password): each secret is encrypted with its own random data key (AES-256-GCM), and the data key
 * is wrapped by a master key that never reaches the database. `KeyVault` is shaped like a KMS's
 * Encrypt/Decrypt with an encryption context, so a cloud KMS can take the local vault's place;
 * `LocalKeyVault` holds master keys read from a secret file.
 *
 * The context (e.g. `csd:<organization id>:<csd id>`) is authenticated, not stored: a sealed secret
 * copied to another row does not open. Everything fails closed: a wrong master key, an unknown key
 * id, a changed byte or another context is a VaultError, never a partial or wrong plaintext. No
 * error carries a key's or a secret's bytes.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export type VaultErrorCode = 'vault_bad_master_key' | 'vault_unknown_key' | 'vault_cannot_open';

export class VaultError extends Error {
  constructor(
    readonly code: VaultErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'VaultError';
  }
}

/** A data key wrapped by a master key: the master key's id and the wrapped bytes (base64). */
export interface WrappedKey {
  keyId: string;
  wrapped: string;
}

/** What a KMS offers: wrap a data key under the current master key, unwrap it under the one it names. */
export interface KeyVault {
  readonly currentKeyId: string;
  wrapKey(dataKey: Buffer, context: string): Promise<WrappedKey>;
  unwrapKey(key: WrappedKey, context: string): Promise<Buffer>;
}

/** A secret as stored: JSON-safe, every field base64 but the ids. */
export interface SealedSecret {
  v: 1;
  alg: 'A256GCM';
  keyId: string;
  wrappedKey: string;
  iv: string;
  tag: string;
  ciphertext: string;
}

const KEY_BYTES = 32;
const IV_BYTES = 12;

/** AES-256-GCM: iv (12) ‖ tag (16) ‖ ciphertext, bound to `aad`. */
function encrypt(key: Buffer, plaintext: Buffer, aad: string): { iv: Buffer; tag: Buffer; ciphertext: Buffer } {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ciphertext };
}

function decrypt(key: Buffer, parts: { iv: Buffer; tag: Buffer; ciphertext: Buffer }, aad: string): Buffer {
  try {
    // authTagLength: a shortened tag is refused, not checked on fewer bytes.
    const decipher = createDecipheriv('aes-256-gcm', key, parts.iv, { authTagLength: 16 }).setAAD(
      Buffer.from(aad, 'utf8'),
    );
    decipher.setAuthTag(parts.tag);
    return Buffer.concat([decipher.update(parts.ciphertext), decipher.final()]);
  } catch {
    throw new VaultError(
      'vault_cannot_open',
      'the secret does not open: another master key, another context, or changed bytes',
    );
  }
}

/**
 * Master keys from a secret file: one a line, `<id>:<base64 of 32 random bytes>` (`openssl rand
 * -base64 32`), the first line the current one (it wraps new data keys), the others older keys
 * kept to unwrap what they wrapped. Blank lines and `#` comments are skipped.
 */
export class LocalKeyVault implements KeyVault {
  readonly currentKeyId: string;
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(keys: readonly { id: string; key: Buffer }[]) {
    if (keys.length === 0) throw new VaultError('vault_bad_master_key', 'no master key');
    for (const { id, key } of keys) {
      if (!/^[\w.-]{1,64}$/.test(id))
        throw new VaultError('vault_bad_master_key', `a master key id is letters, digits, . - _ (at most 64)`);
      if (key.length !== KEY_BYTES)
        throw new VaultError('vault_bad_master_key', `the master key ${id} is not ${KEY_BYTES} bytes`);
    }
    this.currentKeyId = keys[0]!.id;
    this.keys = new Map(keys.map(({ id, key }) => [id, Buffer.from(key)]));
    if (this.keys.size !== keys.length) throw new VaultError('vault_bad_master_key', 'two master keys share an id');
  }

  static fromFile(bytes: Buffer | string): LocalKeyVault {
    const lines = bytes
      .toString()
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    return new LocalKeyVault(
      lines.map((line, n) => {
        const colon = line.indexOf(':');
        if (colon < 1)
          throw new VaultError('vault_bad_master_key', `line ${n + 1} of the master key file is not id:key`);
        return { id: line.slice(0, colon), key: Buffer.from(line.slice(colon + 1), 'base64') };
      }),
    );
  }

  wrapKey(dataKey: Buffer, context: string): Promise<WrappedKey> {
    const { iv, tag, ciphertext } = encrypt(this.master(this.currentKeyId), dataKey, context);
    return Promise.resolve({
      keyId: this.currentKeyId,
      wrapped: Buffer.concat([iv, tag, ciphertext]).toString('base64'),
    });
  }

  unwrapKey(key: WrappedKey, context: string): Promise<Buffer> {
    const bytes = Buffer.from(key.wrapped, 'base64');
    const parts = {
      iv: bytes.subarray(0, IV_BYTES),
      tag: bytes.subarray(IV_BYTES, IV_BYTES + 16),
      ciphertext: bytes.subarray(IV_BYTES + 16),
    };
    return Promise.resolve(decrypt(this.master(key.keyId), parts, context));
  }

  /** A fingerprint of the current master key (not the key): what a log line may name. */
  fingerprint(): string {
    return createHash('sha256').update(this.master(this.currentKeyId)).digest('hex').slice(0, 12);
  }

  private master(id: string): Buffer {
    const key = this.keys.get(id);
    if (!key) throw new VaultError('vault_unknown_key', `no master key ${JSON.stringify(id)} in this vault`);
    return key;
  }
}

/** Encrypts `plaintext` under a new data key, wrapped by the vault, both bound to `context`. */
export async function sealSecret(vault: KeyVault, plaintext: Buffer, context: string): Promise<SealedSecret> {
  const dataKey = randomBytes(KEY_BYTES);
  try {
    const { iv, tag, ciphertext } = encrypt(dataKey, plaintext, context);
    const wrapped = await vault.wrapKey(dataKey, context);
    return {
      v: 1,
      alg: 'A256GCM',
      keyId: wrapped.keyId,
      wrappedKey: wrapped.wrapped,
      iv: iv.toString('base64'),
      tag: tag.toString('base64'),
      ciphertext: ciphertext.toString('base64'),
    };
  } finally {
    dataKey.fill(0);
  }
}

/** The plaintext of a sealed secret, or a VaultError: never a partial or wrong one. */
export async function openSecret(vault: KeyVault, sealed: SealedSecret, context: string): Promise<Buffer> {
  if (sealed.v !== 1 || sealed.alg !== 'A256GCM')
    throw new VaultError(
      'vault_cannot_open',
      `a sealed secret of another format (${String(sealed.v)}, ${String(sealed.alg)})`,
    );
  const dataKey = await vault.unwrapKey({ keyId: sealed.keyId, wrapped: sealed.wrappedKey }, context);
  try {
    return decrypt(
      dataKey,
      {
        iv: Buffer.from(sealed.iv, 'base64'),
        tag: Buffer.from(sealed.tag, 'base64'),
        ciphertext: Buffer.from(sealed.ciphertext, 'base64'),
      },
      context,
    );
  } finally {
    dataKey.fill(0);
  }
}
