/**
 * Errors raised by cfdi-core. Every error carries a stable `code` that callers (the API's error
 * middleware, the worker's classifier, the CLI) branch on; messages are for humans and may change.
 */

/** Stable error codes of the package. */
export const CfdiErrorCode = {
  /** The invoice request failed validation; `issues` lists every problem found. */
  InvalidRequest: 'CFDI_INVALID_REQUEST',
  /** The CSD private key could not be decrypted with the given password. */
  CsdWrongPassword: 'CSD_WRONG_PASSWORD',
  /** The CSD private key is not the one the certificate was issued for. */
  CsdKeyMismatch: 'CSD_KEY_MISMATCH',
  /** The certificate is not valid at the comprobante's Fecha (expired or not yet valid). */
  CsdExpired: 'CSD_EXPIRED',
  /** The emisor RFC of the request differs from the RFC the certificate was issued to. */
  CsdRfcMismatch: 'CSD_RFC_MISMATCH',
  /** The certificate or key bytes are not a DER X.509 certificate / PKCS#8 key. */
  CsdUnreadable: 'CSD_UNREADABLE',
  /** The certificate is an e.firma (FIEL): CFDIs are sealed with a CSD. */
  CsdIsEfirma: 'CSD_IS_EFIRMA',
  /** The certificate handed over as an e.firma (FIEL) is a CSD: the SAT's web services want the e.firma. */
  EfirmaIsCsd: 'EFIRMA_IS_CSD',
  /** The certificate does not chain to one of the CAs the deployment trusts as the SAT's. */
  CsdUntrusted: 'CSD_UNTRUSTED',
  /** An XML document could not be parsed or is not the expected kind of document. */
  InvalidXml: 'CFDI_INVALID_XML',
  /** A TimbreFiscalDigital is missing or malformed. */
  InvalidTfd: 'CFDI_INVALID_TFD',
} as const;
export type CfdiErrorCode = (typeof CfdiErrorCode)[keyof typeof CfdiErrorCode];

/** Base class: a stable `code` plus an optional ES2022 `cause`. */
export class CfdiError extends Error {
  readonly code: CfdiErrorCode;

  constructor(code: CfdiErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CfdiError';
    this.code = code;
  }
}

/** One problem found while validating a request: where (a dotted path) and what. */
export interface ValidationIssue {
  path: string;
  message: string;
  /** The SAT rule broken (CFDI40xxx / CRP20xxx), when the problem is one; `path` is then an XPath. */
  rule?: string;
}

/**
 * Raised by `freezeComprobante` (and the request parser) when the input is invalid. Lists every
 * problem at once so a caller can fix them all in one go.
 */
export class CfdiValidationError extends CfdiError {
  readonly issues: readonly ValidationIssue[];

  constructor(issues: readonly ValidationIssue[]) {
    const head = issues
      .slice(0, 5)
      .map((i) => `${i.path || '(root)'}: ${i.message}`)
      .join('; ');
    const more = issues.length > 5 ? ` (+${issues.length - 5} more)` : '';
    super(CfdiErrorCode.InvalidRequest, `invalid invoice request: ${head}${more}`);
    this.name = 'CfdiValidationError';
    this.issues = issues;
  }
}
