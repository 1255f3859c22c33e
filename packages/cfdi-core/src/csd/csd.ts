import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { CfdiError, CfdiErrorCode } from '../errors.ts';

/** A loaded CSD (certificado de sello digital): certificate facts plus the decrypted private key. */
export interface Csd {
  /** Certificate serial read as ASCII: the 20-digit NoCertificado. */
  noCertificado: string;
  /** Base64 of the DER certificate, as written in `Certificado`. */
  certificadoBase64: string;
  /** RFC the certificate was issued to (for a persona moral, the company's RFC). */
  rfc: string;
  /** Subject name (razón social) as in the certificate. */
  nombre: string;
  validFrom: Date;
  validTo: Date;
  privateKey: KeyObject;
  certificate: X509Certificate;
}

/**
 * Loads a CSD from its bytes: the `.cer` (DER X.509) and the `.key` (DER PKCS#8
 * EncryptedPrivateKeyInfo) with its password. Pure apart from `node:crypto`: reading the files is the
 * caller's job.
 *
 * @throws CfdiError CSD_UNREADABLE (bytes are not a certificate/key), CSD_WRONG_PASSWORD,
 *   CSD_KEY_MISMATCH (the key is not the certificate's).
 */
export function loadCsd(cer: Uint8Array, key: Uint8Array, password: string): Csd {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cer);
  } catch (cause) {
    throw new CfdiError(CfdiErrorCode.CsdUnreadable, 'the .cer is not a DER X.509 certificate', { cause });
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: Buffer.from(key), format: 'der', type: 'pkcs8', passphrase: password });
  } catch (cause) {
    // OpenSSL reports a wrong passphrase on a well-formed EncryptedPrivateKeyInfo as "bad decrypt";
    // anything else means the bytes are not a PKCS#8 key at all.
    const wrongPassword = (cause as { code?: string }).code === 'ERR_OSSL_BAD_DECRYPT';
    throw new CfdiError(
      wrongPassword ? CfdiErrorCode.CsdWrongPassword : CfdiErrorCode.CsdUnreadable,
      wrongPassword ? 'the CSD password does not decrypt the .key' : 'the .key is not a DER PKCS#8 key',
      { cause },
    );
  }
  const certPublic = certificate.publicKey.export({ format: 'der', type: 'spki' });
  const keyPublic = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  if (!certPublic.equals(keyPublic)) {
    throw new CfdiError(CfdiErrorCode.CsdKeyMismatch, 'the .key does not belong to the .cer');
  }
  return {
    noCertificado: noCertificadoOf(certificate),
    certificadoBase64: certificate.raw.toString('base64'),
    rfc: rfcOf(certificate),
    nombre: subjectField(certificate, 'CN') ?? '',
    validFrom: new Date(certificate.validFrom),
    validTo: new Date(certificate.validTo),
    privateKey,
    certificate,
  };
}

/** NoCertificado: the certificate's serial number (hex) read as ASCII digits. */
export function noCertificadoOf(certificate: X509Certificate): string {
  return Buffer.from(certificate.serialNumber, 'hex').toString('latin1');
}

/**
 * RFC of a SAT certificate: the subject's x500UniqueIdentifier, which holds `RFC` or, for a persona
 * moral, `RFC / RFC of its legal representative`; the first is the taxpayer's.
 */
export function rfcOf(certificate: X509Certificate): string {
  const value = subjectField(certificate, 'x500UniqueIdentifier') ?? '';
  return (value.split('/')[0] ?? '').trim();
}

function subjectField(certificate: X509Certificate, field: string): string | undefined {
  for (const line of certificate.subject.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0 && line.slice(0, eq) === field) return line.slice(eq + 1);
  }
  return undefined;
}

/**
 * Checks that a CSD may seal a comprobante of `emisorRfc` at the instant `at`.
 *
 * @throws CfdiError CSD_RFC_MISMATCH, CSD_EXPIRED.
 */
export function assertCsdUsable(csd: Csd, emisorRfc: string, at: Date, what: 'CSD' | 'e.firma' = 'CSD'): void {
  if (csd.rfc !== emisorRfc) {
    throw new CfdiError(
      CfdiErrorCode.CsdRfcMismatch,
      `the ${what} was issued to ${csd.rfc}, not to the emisor ${emisorRfc}`,
    );
  }
  if (at < csd.validFrom || at > csd.validTo) {
    throw new CfdiError(
      CfdiErrorCode.CsdExpired,
      `the ${what} ${csd.noCertificado} is valid from ${csd.validFrom.toISOString()} to ${csd.validTo.toISOString()}, not at ${at.toISOString()}`,
    );
  }
}

/** How long before its end a CSD is said to be expiring (a warning, a metric and an alert): 30 days. */
export const CSD_EXPIRY_WARNING_DAYS = 30;

export interface CsdExpiry {
  noCertificado: string;
  rfc: string;
  validTo: Date;
  /** Whole days left (negative once expired). */
  daysLeft: number;
  /** Seconds left (negative once expired): the metric. */
  secondsLeft: number;
  /** Within `warningDays` of its end, or past it: renew it at the SAT (CertiSAT) now. */
  expiring: boolean;
  expired: boolean;
}

/** Where a CSD stands against `now`: the one rule for the start-up warning, the metric and `npm run ops -- csd:check`. */
export function csdExpiry(
  csd: Pick<Csd, 'noCertificado' | 'rfc' | 'validTo'>,
  now: Date,
  warningDays = CSD_EXPIRY_WARNING_DAYS,
): CsdExpiry {
  const ms = csd.validTo.getTime() - now.getTime();
  return {
    noCertificado: csd.noCertificado,
    rfc: csd.rfc,
    validTo: csd.validTo,
    daysLeft: Math.floor(ms / 86_400_000),
    secondsLeft: Math.floor(ms / 1000),
    expiring: ms <= warningDays * 86_400_000,
    expired: ms <= 0,
  };
}

/** The start-up line about a CSD that expires soon (or has): undefined while it is far from its end. */
export function csdExpiryWarning(expiry: CsdExpiry): string | undefined {
  if (!expiry.expiring) return undefined;
  return expiry.expired
    ? `the CSD ${expiry.noCertificado} expired on ${expiry.validTo.toISOString()}: no CFDI can be sealed until a new one is configured (CSD_CER_PATH, CSD_KEY_PATH, CSD_PASSWORD)`
    : `the CSD ${expiry.noCertificado} expires on ${expiry.validTo.toISOString()} (${expiry.daysLeft} days): renew it at the SAT (CertiSAT) and configure the new one before then`;
}
