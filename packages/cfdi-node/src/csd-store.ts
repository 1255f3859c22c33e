/**
 * A CSD handed over by its emisor, made storable and made usable again: `sealCsd` checks the files
 * with cfdi-core's one rule (checkCsdUpload) and seals the private key with its password under a
 * data key of its own, wrapped by the vault's master key (envelope encryption); `openCsd` is the
 * way back, and fails closed (VaultError) under another master key or on a row whose sealed bytes
 * belong to another CSD. Neither logs nor returns the key or the password in an error.
 */
import type { X509Certificate } from 'node:crypto';
import { CfdiError, CfdiErrorCode, checkCsdUpload, loadCsd, type Csd, type CsdUploadCheck } from '@timbra/cfdi-core';
import { openSecret, sealSecret, type KeyVault, type SealedSecret } from './vault.ts';

/** What an emisor hands over: the `.cer` and `.key` files' bytes and the key's password. */
export interface CsdFiles {
  cer: Uint8Array;
  key: Uint8Array;
  password: string;
}

/** A CSD as the database keeps it (@timbra/db/csds): the certificate's facts and bytes, the rest sealed. */
export interface SealedCsd {
  organizationId: string;
  noCertificado: string;
  rfc: string;
  validFrom: Date;
  validTo: Date;
  /** The certificate, DER. */
  certificate: Uint8Array;
  sealed: SealedSecret;
  chain: CsdUploadCheck['chain'];
}

/** What binds a sealed CSD to its row: opened under another emisor or NoCertificado, it fails. */
export const csdContext = (organizationId: string, noCertificado: string) => `csd:${organizationId}:${noCertificado}`;

/**
 * Checks the files for the emisor (checkCsdUpload: pair, CSD not e.firma, RFC, validity at `at`,
 * chain when trusted CAs are given) and seals the key and password.
 *
 * @throws CfdiError CSD_* (checkCsdUpload's codes), VaultError when the vault cannot wrap.
 */
export async function sealCsd(
  files: CsdFiles,
  emisor: { id: string; rfc: string },
  options: { vault: KeyVault; at: Date; trustedCas?: readonly X509Certificate[] },
): Promise<{ stored: SealedCsd; csd: Csd }> {
  const { csd, chain } = checkCsdUpload(files, {
    rfc: emisor.rfc,
    at: options.at,
    ...(options.trustedCas ? { trustedCas: options.trustedCas } : {}),
  });
  const sealed = await sealKeyPair(options.vault, files, csdContext(emisor.id, csd.noCertificado));
  return {
    csd,
    stored: {
      organizationId: emisor.id,
      noCertificado: csd.noCertificado,
      rfc: csd.rfc,
      validFrom: csd.validFrom,
      validTo: csd.validTo,
      certificate: new Uint8Array(csd.certificate.raw),
      sealed,
      chain,
    },
  };
}

/** The private key and its password sealed together under `context` (a CSD's or an e.firma's). */
export async function sealKeyPair(
  vault: KeyVault,
  files: Pick<CsdFiles, 'key' | 'password'>,
  context: string,
): Promise<SealedSecret> {
  const secret = Buffer.from(
    JSON.stringify({ key: Buffer.from(files.key).toString('base64'), password: files.password }),
    'utf8',
  );
  try {
    return await sealSecret(vault, secret, context);
  } finally {
    secret.fill(0);
  }
}

/**
 * `sealKeyPair`'s way back, with the stored certificate: the files as handed over, loaded (the key
 * must open with the password and be the certificate's) and checked to be `noCertificado`'s.
 *
 * @throws VaultError as openSecret; CfdiError CSD_KEY_MISMATCH when what opens is not the certificate's key.
 */
export async function openKeyPair(
  vault: KeyVault,
  stored: { certificate: Uint8Array; noCertificado: string; sealed: SealedSecret | object },
  context: string,
): Promise<{ csd: Csd; credentials: CsdFiles }> {
  const plain = await openSecret(vault, stored.sealed as SealedSecret, context);
  try {
    const { key, password } = JSON.parse(plain.toString('utf8')) as { key: string; password: string };
    const credentials = { cer: Buffer.from(stored.certificate), key: Buffer.from(key, 'base64'), password };
    const csd = loadCsd(credentials.cer, credentials.key, credentials.password);
    if (csd.noCertificado !== stored.noCertificado)
      throw new CfdiError(
        CfdiErrorCode.CsdKeyMismatch,
        `the stored certificate is ${csd.noCertificado}, not ${stored.noCertificado}`,
      );
    return { csd, credentials };
  } finally {
    plain.fill(0);
  }
}

/**
 * A stored CSD made usable: the loaded CSD (it seals) and its files' bytes and password (a
 * cancellation is signed with them).
 *
 * @throws VaultError vault_unknown_key / vault_cannot_open (another master key, changed bytes, a
 *   sealed value moved from another row); CfdiError CSD_KEY_MISMATCH when what opens is not the
 *   certificate's key.
 */
export async function openCsd(
  stored: Pick<SealedCsd, 'organizationId' | 'noCertificado' | 'certificate'> & { sealed: SealedSecret | object },
  vault: KeyVault,
): Promise<{ csd: Csd; credentials: CsdFiles }> {
  return openKeyPair(vault, stored, csdContext(stored.organizationId, stored.noCertificado));
}
