/**
 * The CSD an app seals with, chosen once at its start, the same way in the API and the worker: the
 * CSD stored in the database that is active now (@timbra/db/csds) when the vault's master keys are
 * set (VAULT_KEYS) and one is, else the `CSD_*` files (in the sandbox profile, the SAT test CSD of
 * EMISOR_RFC under SAT_DIR).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCsd, type Csd } from '@timbra/cfdi-core';
import { openCsd, type CsdFiles, type SealedCsd } from './csd-store.ts';
import { LocalKeyVault, type KeyVault } from './vault.ts';

export interface EmisorCsd {
  csd: Csd;
  /** The files' bytes and password: a cancellation is signed with them. */
  credentials: CsdFiles;
  source: 'stored' | 'files';
}

interface CsdFileSettings {
  SAT_DIR: string;
  EMISOR_RFC: string;
  CSD_CER_PATH?: string | undefined;
  CSD_KEY_PATH?: string | undefined;
  CSD_PASSWORD?: string | undefined;
  CSD_PASSWORD_FILE?: string | undefined;
}

/** The CSD files the settings name (default: `$SAT_DIR/csd/<EMISOR_RFC>.*`), or undefined when one is missing. */
export function readCsdFiles(s: CsdFileSettings): CsdFiles | undefined {
  const cer = s.CSD_CER_PATH ?? join(s.SAT_DIR, 'csd', `${s.EMISOR_RFC}.cer`);
  const key = s.CSD_KEY_PATH ?? join(s.SAT_DIR, 'csd', `${s.EMISOR_RFC}.key`);
  const passwordFile = s.CSD_PASSWORD_FILE ?? join(s.SAT_DIR, 'csd', `${s.EMISOR_RFC}.password.txt`);
  if (!existsSync(cer) || !existsSync(key) || (s.CSD_PASSWORD === undefined && !existsSync(passwordFile)))
    return undefined;
  return {
    cer: readFileSync(cer),
    key: readFileSync(key),
    password: s.CSD_PASSWORD ?? readFileSync(passwordFile, 'utf8').trim(),
  };
}

/** The vault of the VAULT_KEYS setting (a master key file's text), or undefined when it is not set. */
export function vaultOf(keys: string | undefined): KeyVault | undefined {
  return keys ? LocalKeyVault.fromFile(keys) : undefined;
}

/**
 * The stored CSD when there is one (opened with the vault: it fails closed, and the app with it),
 * else the files' CSD, else undefined.
 */
export async function emisorCsd(options: {
  stored: (Pick<SealedCsd, 'organizationId' | 'noCertificado' | 'certificate'> & { sealed: object }) | undefined;
  vault: KeyVault | undefined;
  files: CsdFiles | undefined;
}): Promise<EmisorCsd | undefined> {
  if (options.stored && options.vault) return { ...(await openCsd(options.stored, options.vault)), source: 'stored' };
  if (!options.files) return undefined;
  const { cer, key, password } = options.files;
  return { csd: loadCsd(cer, key, password), credentials: options.files, source: 'files' };
}
