/**
 * How the SAT's Descarga Masiva checks who is asking: an XML signature (RSA-SHA1 over exclusive
 * c14n) made with the taxpayer's e.firma. Authentication signs the WS-Security Timestamp and carries
 * the certificate as a BinarySecurityToken; every later request signs its operation element (its
 * Signature left out, as the SAT computes it) and carries the certificate in KeyInfo.
 */
import { createHash, createVerify, X509Certificate } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import { ExclusiveCanonicalization } from 'xml-crypto';
import { chainsTo, rfcOf, satCertificateKind } from '@timbra/cfdi-core';

export const NS = {
  soap: 'http://schemas.xmlsoap.org/soap/envelope/',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  wsu: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd',
  wsse: 'http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd',
  /** The namespace of the download services' operations. */
  des: 'http://DescargaMasivaTerceros.sat.gob.mx',
  /** The authentication service's (without `.sat`). */
  auth: 'http://DescargaMasivaTerceros.gob.mx',
} as const;

/**
 * A request the SAT refuses. `code` is the SAT's CodEstatus (300 user not valid, 301 malformed XML,
 * 302 malformed seal, 303 seal not the RfcSolicitante's, 304 certificate revoked or expired, 305
 * certificate not valid), answered in the operation's result; authentication answers a SOAP fault.
 */
export class DescargaRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'DescargaRefusal';
  }
}

/** The signer: an e.firma the sandbox trusts, valid now. */
export interface Signer {
  certificate: X509Certificate;
  rfc: string;
}

/** Parses a SOAP envelope (no DOCTYPE: no entity of any kind is expanded). */
export function parseEnvelope(xml: string): Document {
  if (/<!DOCTYPE/i.test(xml)) throw new DescargaRefusal('301', 'XML Mal Formado');
  let failed = false;
  const doc = new DOMParser({
    errorHandler: (level: string) => {
      if (level !== 'warning') failed = true;
    },
  }).parseFromString(xml, 'text/xml');
  const root = doc?.documentElement;
  if (failed || !root || root.localName !== 'Envelope' || root.namespaceURI !== NS.soap) {
    throw new DescargaRefusal('301', 'XML Mal Formado');
  }
  return doc as unknown as Document;
}

/** The first child element of `parent` named `local` in `ns` (any namespace when `ns` is '*'). */
export function child(parent: Element | Document | null | undefined, ns: string, local: string): Element | undefined {
  if (!parent) return undefined;
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    const e = node as Element;
    if (e.nodeType === 1 && e.localName === local && (ns === '*' || e.namespaceURI === ns)) return e;
  }
  return undefined;
}

/** The SOAP Body's first element: the operation. */
export function operationOf(doc: Document): Element {
  const body = child(doc.documentElement, NS.soap, 'Body');
  for (let node = body?.firstChild; node; node = node.nextSibling) {
    if (node.nodeType === 1) return node as Element;
  }
  throw new DescargaRefusal('301', 'XML Mal Formado');
}

const c14n = new ExclusiveCanonicalization();
const canonical = (element: Element): string => c14n.process(element, {});

/**
 * Checks a ds:Signature whose one Reference covers `signed` (already without the Signature):
 * its digest, then the signature over the canonical SignedInfo with `certificate`'s key.
 */
function checkSignature(signature: Element, signed: Element, certificate: X509Certificate, uri: string): void {
  const signedInfo = child(signature, NS.ds, 'SignedInfo');
  const reference = child(signedInfo, NS.ds, 'Reference');
  const algorithm = (parent: Element | undefined, local: string) =>
    child(parent, NS.ds, local)?.getAttribute('Algorithm') ?? '';
  if (
    !signedInfo ||
    !reference ||
    reference.getAttribute('URI') !== uri ||
    algorithm(signedInfo, 'CanonicalizationMethod') !== 'http://www.w3.org/2001/10/xml-exc-c14n#' ||
    algorithm(signedInfo, 'SignatureMethod') !== 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' ||
    algorithm(reference, 'DigestMethod') !== 'http://www.w3.org/2000/09/xmldsig#sha1'
  ) {
    throw new DescargaRefusal('302', 'Sello Mal Formado');
  }
  const digest = (child(reference, NS.ds, 'DigestValue')?.textContent ?? '').trim();
  if (createHash('sha1').update(canonical(signed)).digest('base64') !== digest) {
    throw new DescargaRefusal('302', 'Sello Mal Formado');
  }
  const value = (child(signature, NS.ds, 'SignatureValue')?.textContent ?? '').replace(/\s+/g, '');
  let ok: boolean;
  try {
    ok = createVerify('RSA-SHA1').update(canonical(signedInfo)).verify(certificate.publicKey, value, 'base64');
  } catch {
    ok = false;
  }
  if (!ok) throw new DescargaRefusal('302', 'Sello Mal Formado');
}

function certificateFrom(base64: string | null | undefined): X509Certificate {
  try {
    return new X509Certificate(Buffer.from((base64 ?? '').replace(/\s+/g, ''), 'base64'));
  } catch {
    throw new DescargaRefusal('305', 'Certificado Inválido');
  }
}

/**
 * The e.firma rules: a SAT e.firma (not a CSD), chaining to a CA the sandbox trusts, valid at `now`.
 * The sandbox has no copy of the SAT's e.firma CAs: it trusts only `trustedCa` (the tests' own).
 */
export function signerOf(certificate: X509Certificate, trustedCa: X509Certificate | undefined, now: Date): Signer {
  if (satCertificateKind(certificate) !== 'efirma') throw new DescargaRefusal('305', 'Certificado Inválido');
  if (now < new Date(certificate.validFrom) || now > new Date(certificate.validTo)) {
    throw new DescargaRefusal('304', 'Certificado Revocado o Caduco');
  }
  if (!trustedCa || !chainsTo(certificate, [trustedCa], now)) {
    throw new DescargaRefusal('305', 'Certificado Inválido');
  }
  return { certificate, rfc: rfcOf(certificate) };
}

/**
 * Authentication (`Autentica`): the Timestamp signed with the certificate of the BinarySecurityToken
 * it references, the Timestamp current at `now` (a minute of clock skew allowed).
 */
export function authenticate(doc: Document, trustedCa: X509Certificate | undefined, now: Date): Signer {
  const security = child(child(doc.documentElement, NS.soap, 'Header'), NS.wsse, 'Security');
  const timestamp = child(security, NS.wsu, 'Timestamp');
  const token = child(security, NS.wsse, 'BinarySecurityToken');
  const signature = child(security, NS.ds, 'Signature');
  if (!security || !timestamp || !token || !signature) throw new DescargaRefusal('302', 'Sello Mal Formado');
  const tokenRef = child(
    child(child(signature, NS.ds, 'KeyInfo'), NS.wsse, 'SecurityTokenReference'),
    NS.wsse,
    'Reference',
  );
  if (tokenRef?.getAttribute('URI') !== `#${token.getAttributeNS(NS.wsu, 'Id')}`) {
    throw new DescargaRefusal('302', 'Sello Mal Formado');
  }
  const certificate = certificateFrom(token.textContent);
  checkSignature(signature, timestamp, certificate, `#${timestamp.getAttributeNS(NS.wsu, 'Id')}`);
  const created = Date.parse(child(timestamp, NS.wsu, 'Created')?.textContent ?? '');
  const expires = Date.parse(child(timestamp, NS.wsu, 'Expires')?.textContent ?? '');
  const skewMs = 60_000;
  if (!(created <= now.getTime() + skewMs && now.getTime() <= expires + skewMs && created < expires)) {
    throw new DescargaRefusal('302', 'Sello Mal Formado');
  }
  return signerOf(certificate, trustedCa, now);
}

/**
 * A signed request (query, verify, download): the Signature inside the operation's request element
 * covers the whole operation element without that Signature, with the KeyInfo's certificate; the
 * certificate's RFC must be the request's RfcSolicitante (303).
 */
export function signedRequest(
  doc: Document,
  requestLocal: string,
  trustedCa: X509Certificate | undefined,
  now: Date,
): { signer: Signer; operation: Element; request: Element } {
  const operation = operationOf(doc);
  const request = child(operation, NS.des, requestLocal);
  const signature = child(request, NS.ds, 'Signature');
  if (!request || !signature) throw new DescargaRefusal('302', 'Sello Mal Formado');
  const x509 = child(child(child(signature, NS.ds, 'KeyInfo'), NS.ds, 'X509Data'), NS.ds, 'X509Certificate');
  const certificate = certificateFrom(x509?.textContent);
  const signed = operation.cloneNode(true) as Element;
  const inner = child(child(signed, NS.des, requestLocal), NS.ds, 'Signature');
  inner?.parentNode?.removeChild(inner);
  checkSignature(signature, signed, certificate, '');
  const signer = signerOf(certificate, trustedCa, now);
  if (signer.rfc !== (request.getAttribute('RfcSolicitante') ?? '').toUpperCase()) {
    throw new DescargaRefusal('303', 'Sello no corresponde con RfcSolicitante');
  }
  return { signer, operation, request };
}
