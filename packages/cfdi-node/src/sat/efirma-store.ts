/**
 * An organization's e.firma (FIEL), kept as its CSD is: `sealEfirma` checks the files with
 * cfdi-core's one rule (checkEfirmaUpload) and seals the private key with its password under a data
 * key of its own, wrapped by the vault's master key; `openEfirma` is the way back and fails closed.
 * The e.firma signs Timbra's requests to the SAT's web services (Descarga Masiva), never a CFDI.
 */
import type { X509Certificate } from 'node:crypto';
import { checkEfirmaUpload } from '@timbra/cfdi-core';
import { openKeyPair, sealKeyPair, type CsdFiles, type SealedCsd } from '../csd-store.ts';
import type { KeyVault, SealedSecret } from '../vault.ts';
import type { Efirma } from './descarga-service.ts';

/** An e.firma as the database keeps it (@timbra/db/csds, efirmas): the certificate's facts, the rest sealed. */
export type SealedEfirma = SealedCsd;

/** What binds a sealed e.firma to its row: opened under another organization or certificate, it fails. */
export const efirmaContext = (organizationId: string, noCertificado: string) =>
  `efirma:${organizationId}:${noCertificado}`;

/**
 * Checks the files for the organization (checkEfirmaUpload: pair, e.firma not CSD, RFC, validity at
 * `at`, chain when trusted CAs are given) and seals the key and password.
 *
 * @throws CfdiError (checkEfirmaUpload's codes), VaultError when the vault cannot wrap.
 */
export async function sealEfirma(
  files: CsdFiles,
  organization: { id: string; rfc: string },
  options: { vault: KeyVault; at: Date; trustedCas?: readonly X509Certificate[] },
): Promise<SealedEfirma> {
  const { csd: pair, chain } = checkEfirmaUpload(files, {
    rfc: organization.rfc,
    at: options.at,
    ...(options.trustedCas ? { trustedCas: options.trustedCas } : {}),
  });
  return {
    organizationId: organization.id,
    noCertificado: pair.noCertificado,
    rfc: pair.rfc,
    validFrom: pair.validFrom,
    validTo: pair.validTo,
    certificate: new Uint8Array(pair.certificate.raw),
    sealed: await sealKeyPair(options.vault, files, efirmaContext(organization.id, pair.noCertificado)),
    chain,
  };
}

/**
 * A stored e.firma made usable: the files the SAT's web services are signed with.
 *
 * @throws VaultError (another master key, changed bytes, a sealed value moved from another row);
 *   CfdiError CSD_KEY_MISMATCH when what opens is not the certificate's key.
 */
export async function openEfirma(
  stored: Pick<SealedEfirma, 'organizationId' | 'noCertificado' | 'certificate'> & { sealed: SealedSecret | object },
  vault: KeyVault,
): Promise<Efirma> {
  const { credentials } = await openKeyPair(vault, stored, efirmaContext(stored.organizationId, stored.noCertificado));
  return { cer: Buffer.from(credentials.cer), key: Buffer.from(credentials.key), password: credentials.password };
}
