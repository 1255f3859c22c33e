import { X509Certificate } from 'node:crypto';
import { CfdiError, CfdiErrorCode } from '../errors.ts';
import { assertCsdUsable, loadCsd, type Csd } from './csd.ts';

/**
 * The SAT issues two kinds of certificate on the same CAs: the CSD, which seals CFDIs, and the
 * e.firma (FIEL), the taxpayer's signature. Only a CSD names a branch: its subject carries an OU
 * ("Sucursal 1", a store's name); an e.firma's has none (the rule of phpcfdi/credentials).
 */
export function satCertificateKind(certificate: X509Certificate): 'csd' | 'efirma' {
  const ou = certificate.subject
    .split('\n')
    .find((line) => line.startsWith('OU='))
    ?.slice(3)
    .trim();
  return ou ? 'csd' : 'efirma';
}

/**
 * Whether `certificate` chains, by names and signatures, to one of `anchors` (the SAT's CAs an
 * operator trusts; an anchor may be an intermediate), each certificate on the way valid at `at`.
 * `intermediates` may supply the CAs between them. At most 4 links.
 */
export function chainsTo(
  certificate: X509Certificate,
  anchors: readonly X509Certificate[],
  at: Date,
  intermediates: readonly X509Certificate[] = [],
): boolean {
  const validAt = (c: X509Certificate) => new Date(c.validFrom) <= at && at <= new Date(c.validTo);
  const signs = (issuer: X509Certificate, subject: X509Certificate) =>
    issuer.ca && validAt(issuer) && subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
  let current = certificate;
  for (let depth = 0; depth < 4; depth++) {
    if (anchors.some((anchor) => signs(anchor, current))) return true;
    const next = intermediates.find((i) => i !== current && signs(i, current));
    if (!next) return false;
    current = next;
  }
  return false;
}

/** Reads a PEM bundle (one or more `-----BEGIN CERTIFICATE-----` blocks) or one DER certificate. */
export function readCertificates(bytes: Uint8Array): X509Certificate[] {
  const text = Buffer.from(bytes).toString('latin1');
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  try {
    return blocks ? blocks.map((pem) => new X509Certificate(pem)) : [new X509Certificate(bytes)];
  } catch (cause) {
    throw new CfdiError(CfdiErrorCode.CsdUnreadable, 'the trusted CAs are not PEM or DER certificates', { cause });
  }
}

export interface CsdUploadCheck {
  csd: Csd;
  /** `verified`: it chains to a trusted CA; `unchecked`: no CA is configured (said, never silent). */
  chain: 'verified' | 'unchecked';
}

type UploadedFiles = { cer: Uint8Array; key: Uint8Array; password: string };
type UploadExpected = { rfc: string; at: Date; trustedCas?: readonly X509Certificate[] };

/**
 * The one rule for a CSD an organization hands over: the files read and the key opened with its
 * password, the pair matching, a CSD and not an e.firma, issued to the organization's RFC, valid
 * now, and issued by one of the trusted CAs when any is configured.
 *
 * @throws CfdiError CSD_UNREADABLE, CSD_WRONG_PASSWORD, CSD_KEY_MISMATCH, CSD_IS_EFIRMA,
 *   CSD_RFC_MISMATCH, CSD_EXPIRED, CSD_UNTRUSTED — in that order: the first that applies.
 */
export function checkCsdUpload(files: UploadedFiles, expected: UploadExpected): CsdUploadCheck {
  return checkSatCertificate('csd', files, expected);
}

/**
 * The same rule for the e.firma (FIEL) an organization hands over so Timbra can ask the SAT's web
 * services (Descarga Masiva) in its name: everything `checkCsdUpload` checks, but an e.firma and
 * not a CSD. (`csd` in the answer is the loaded pair: the same shape signs either way.)
 *
 * @throws CfdiError as checkCsdUpload, with EFIRMA_IS_CSD in CSD_IS_EFIRMA's place.
 */
export function checkEfirmaUpload(files: UploadedFiles, expected: UploadExpected): CsdUploadCheck {
  return checkSatCertificate('efirma', files, expected);
}

function checkSatCertificate(kind: 'csd' | 'efirma', files: UploadedFiles, expected: UploadExpected): CsdUploadCheck {
  const csd = loadCsd(files.cer, files.key, files.password);
  const what = kind === 'csd' ? 'CSD' : 'e.firma';
  if (satCertificateKind(csd.certificate) !== kind)
    throw kind === 'csd'
      ? new CfdiError(
          CfdiErrorCode.CsdIsEfirma,
          'the certificate is an e.firma (FIEL), not a CSD: CFDIs are sealed with a CSD (certificado de sello digital)',
        )
      : new CfdiError(
          CfdiErrorCode.EfirmaIsCsd,
          "the certificate is a CSD (it names a branch), not an e.firma (FIEL): the SAT's web services authenticate the taxpayer's e.firma",
        );
  assertCsdUsable(csd, expected.rfc, expected.at, what);
  const cas = expected.trustedCas ?? [];
  if (cas.length === 0) return { csd, chain: 'unchecked' };
  if (!chainsTo(csd.certificate, cas, expected.at))
    throw new CfdiError(
      CfdiErrorCode.CsdUntrusted,
      `the ${what} ${csd.noCertificado} was not issued by a trusted CA (its issuer names ${JSON.stringify(csd.certificate.issuer.split('\n').find((l) => l.startsWith('CN=')) ?? '')})`,
    );
  return { csd, chain: 'verified' };
}
