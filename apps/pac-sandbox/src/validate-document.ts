import { createHash, X509Certificate, type KeyObject } from 'node:crypto';
import {
  attr,
  cadenaOriginal,
  childElements,
  instantOf,
  NS,
  noCertificadoOf,
  parseXml,
  rfcOf,
  STAMP_WINDOW_MS,
  timeZoneForCodigoPostal,
  verificarSello,
  type XmlElement,
} from '@timbra/cfdi-core';

/** What the PAC checks found: a document to stamp, or a SAT/PAC rejection code. */
export type DocumentCheck =
  | {
      ok: true;
      cadena: string;
      cadenaHash: string;
      sello: string;
      noCertificado: string;
      rfcEmisor: string;
      rfcReceptor: string;
      total: string;
      hasTfd: boolean;
      /** The parsed document, for the SAT rules. */
      root: XmlElement;
    }
  | { ok: false; code: string; message: string };

export const MESSAGES: Readonly<Record<string, string>> = {
  '301': 'La estructura del comprobante es incorrecta.',
  '302': 'Sello mal formado o inválido.',
  '303': 'Sello no corresponde a emisor.',
  '305': 'La fecha de emisión no esta dentro de la vigencia del CSD del Emisor.',
  '307': 'El comprobante contiene un timbre previo.',
  '308': 'Certificado no expedido por el SAT.',
  '401': 'El rango de la fecha de generación no debe de ser mayor a 72 horas para la emisión del timbre.',
  '402': 'RFC del emisor no se encuentra en el régimen de contribuyentes.',
};

// A comprobante "from the future" beyond clock skew is refused too.
const FUTURE_SKEW_MS = 5 * 60_000;

interface CachedCertificate {
  cert: X509Certificate;
  /** `cert.publicKey` builds a new KeyObject on every access: kept once. */
  publicKey: KeyObject;
  noCertificado: string;
  rfc: string;
  validFrom: Date;
  validTo: Date;
  /** SHA-256 fingerprint of the DER: what the SAT's own certificates are known by. */
  fingerprint: string;
  /** Whether a trusted test CA issued it, by the CA's fingerprint (checked once). */
  trusted?: Map<string, boolean>;
}

/**
 * Which certificates the sandbox takes as the SAT's. A real PAC checks the chain up to the SAT's
 * CAs; the sandbox has none of their certificates, so it knows the SAT's by their bytes (the SAT's
 * test CSDs in SAT_DIR/csd) and takes a CA it is told to trust (the tests' own) by its signature.
 * A certificate whose issuer merely names the SAT is neither: 308.
 */
export interface CertificateTrust {
  /** SHA-256 fingerprints (hex, as X509Certificate.fingerprint256) of SAT-issued certificates. */
  satCertificates: ReadonlySet<string>;
  /** A CA taken as the SAT's (the tests' own, never in production): SANDBOX_TRUSTED_CA_FILE. */
  ca?: X509Certificate;
}

// Emisores stamp thousands of documents with the same certificate: parse it once.
const certificates = new Map<string, CachedCertificate | null>();

function certificateOf(base64: string): CachedCertificate | null {
  let cached = certificates.get(base64);
  if (cached === undefined) {
    try {
      const cert = new X509Certificate(Buffer.from(base64, 'base64'));
      cached = {
        cert,
        publicKey: cert.publicKey,
        noCertificado: noCertificadoOf(cert),
        rfc: rfcOf(cert),
        validFrom: new Date(cert.validFrom),
        validTo: new Date(cert.validTo),
        fingerprint: cert.fingerprint256,
      };
    } catch {
      cached = null;
    }
    if (certificates.size > 1000) certificates.clear();
    certificates.set(base64, cached);
  }
  return cached;
}

/** Whether `trustedCa` issued the certificate (its name and its signature). */
function issuedBy(cert: CachedCertificate, trustedCa: X509Certificate | undefined): boolean {
  if (!trustedCa) return false;
  cert.trusted ??= new Map();
  let verdict = cert.trusted.get(trustedCa.fingerprint256);
  if (verdict === undefined) {
    verdict = cert.cert.checkIssued(trustedCa) && cert.cert.verify(trustedCa.publicKey);
    cert.trusted.set(trustedCa.fingerprint256, verdict);
  }
  return verdict;
}

/**
 * The checks a PAC runs before stamping (Anexo 20 / Matriz de errores): structure (301), certificate
 * from the SAT (308), sello (302), emisor = certificate (303), certificate valid at Fecha (305),
 * Fecha within the last 72 hours (401), emisor in the LCO (402).
 */
export function checkDocument(
  xml: string,
  now: Date,
  rejectRfcs: readonly string[],
  trust: CertificateTrust,
): DocumentCheck {
  const fail = (code: string, detail?: string): DocumentCheck => ({
    ok: false,
    code,
    message: `${MESSAGES[code] ?? 'Rechazado.'}${detail ? ` ${detail}` : ''}`,
  });
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch {
    return fail('301', 'XML mal formado.');
  }
  if (root.ns !== NS.cfdi || root.local !== 'Comprobante' || attr(root, 'Version') !== '4.0') {
    return fail('301', 'No es un CFDI 4.0.');
  }
  const emisor = childElements(root, NS.cfdi, 'Emisor')[0];
  const receptor = childElements(root, NS.cfdi, 'Receptor')[0];
  const sello = attr(root, 'Sello');
  const certificado = attr(root, 'Certificado');
  const fecha = attr(root, 'Fecha');
  const lugar = attr(root, 'LugarExpedicion');
  const total = attr(root, 'Total');
  if (
    !emisor ||
    !receptor ||
    childElements(root, NS.cfdi, 'Conceptos').length !== 1 ||
    !sello ||
    !certificado ||
    !fecha ||
    !lugar ||
    !total
  ) {
    return fail('301', 'Faltan nodos o atributos requeridos.');
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(fecha)) return fail('301', 'Fecha con formato inválido.');
  const hasTfd = childElements(root, NS.cfdi, 'Complemento').some(
    (c) => childElements(c, NS.tfd, 'TimbreFiscalDigital').length > 0,
  );

  const cert = certificateOf(certificado);
  if (!cert) return fail('301', 'Certificado ilegible.');
  if (!trust.satCertificates.has(cert.fingerprint) && !issuedBy(cert, trust.ca)) return fail('308');
  if (attr(root, 'NoCertificado') !== cert.noCertificado) {
    return fail('301', 'NoCertificado no corresponde al certificado.');
  }

  const cadena = cadenaOriginal(root);
  // Verified on the event loop: ~40 µs, less than a hop to the thread pool costs.
  if (!verificarSello(cadena, sello, cert.publicKey)) return fail('302');
  const rfcEmisor = attr(emisor, 'Rfc') ?? '';
  if (cert.rfc !== rfcEmisor) return fail('303');

  const issuedAt = instantOf(fecha, timeZoneForCodigoPostal(lugar));
  if (issuedAt < cert.validFrom || issuedAt > cert.validTo) return fail('305');
  const age = now.getTime() - issuedAt.getTime();
  if (age > STAMP_WINDOW_MS || age < -FUTURE_SKEW_MS) return fail('401');
  if (rejectRfcs.includes(rfcEmisor)) return fail('402');

  return {
    ok: true,
    cadena,
    cadenaHash: createHash('sha256').update(cadena, 'utf8').digest('hex'),
    sello,
    noCertificado: attr(root, 'NoCertificado') ?? '',
    rfcEmisor,
    rfcReceptor: attr(receptor, 'Rfc') ?? '',
    total,
    hasTfd,
    root,
  };
}
