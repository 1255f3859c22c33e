/**
 * The tests' own certificate authority, so the suite does not die with the SAT's test CSDs (they
 * expire on 2027-05-09 and 2027-05-18). It re-issues each SAT test certificate — the same subject,
 * serial (so the same NoCertificado), public key and extensions, the SAT's private key and password
 * still open it — signed by this CA and valid until 2099. The PAC sandbox accepts it as a "SAT" root
 * only when told to (`SANDBOX_TRUSTED_CA_FILE`, the `trustedCa` option): never in production.
 *
 * The CA's key is a fixture (`fixtures/test-ca.key.pem`, test-only); its certificate and the
 * re-issued ones are built from it deterministically (fixed validity and serials; RSA PKCS#1 v1.5
 * signatures are deterministic), so every process of a run — and every run — makes the same bytes.
 */
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import forge from 'node-forge';

const here = dirname(fileURLToPath(import.meta.url));
const CA_KEY = resolve(here, '../fixtures/test-ca.key.pem');
/** The re-issued certificates' end: far beyond any test's clock. */
export const TEST_CERTIFICATE_END = new Date('2099-12-31T23:59:59Z');

let ca: { key: forge.pki.rsa.PrivateKey; cert: forge.pki.Certificate; pem: string } | undefined;

function testCa() {
  if (ca) return ca;
  const key = forge.pki.privateKeyFromPem(readFileSync(CA_KEY, 'utf8'));
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date('2020-01-01T00:00:00Z');
  cert.validity.notAfter = TEST_CERTIFICATE_END;
  const name = [
    { name: 'commonName', value: 'Timbra test CA (not the SAT)' },
    { name: 'organizationName', value: 'Timbra tests' },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true },
  ]);
  cert.sign(key, forge.md.sha256.create());
  ca = { key, cert, pem: forge.pki.certificateToPem(cert) };
  return ca;
}

/** The test CA's certificate (PEM): what the sandbox is told to trust. */
export function testCaPem(): string {
  return testCa().pem;
}

const reissued = new Map<string, Buffer>();

/** A certificate (DER) re-issued by the test CA: its subject, serial, key and extensions, valid until 2099. */
export function reissueCertificate(der: Buffer): Buffer {
  const id = createHash('sha256').update(der).digest('hex');
  const cached = reissued.get(id);
  if (cached) return cached;
  const out = copySignedByTestCa(der, (_original, ca) => ca.subject.attributes);
  reissued.set(id, out);
  return out;
}

/**
 * A forgery: the certificate (DER) with its subject, serial and key, whose issuer names the SAT
 * exactly as the original does, but signed by a key that is not the SAT's (the test CA's). What a
 * PAC must refuse (308): only a signature that verifies up to the SAT's CA makes a certificate the SAT's.
 */
export function forgeSatIssuedCertificate(der: Buffer): Buffer {
  return copySignedByTestCa(der, (original) => original.issuer.attributes);
}

/** `der`'s subject, serial, key and extensions until 2099, with the issuer `issuer` names, signed by the test CA's key. */
function copySignedByTestCa(
  der: Buffer,
  issuer: (original: forge.pki.Certificate, ca: forge.pki.Certificate) => forge.pki.CertificateField[],
): Buffer {
  const { key, cert: caCert } = testCa();
  const original = forge.pki.certificateFromAsn1(forge.asn1.fromDer(der.toString('binary')));
  const cert = forge.pki.createCertificate();
  cert.publicKey = original.publicKey;
  cert.serialNumber = original.serialNumber;
  cert.validity.notBefore = original.validity.notBefore;
  cert.validity.notAfter = TEST_CERTIFICATE_END;
  cert.setSubject(original.subject.attributes);
  cert.setIssuer(issuer(original, caCert));
  cert.setExtensions(original.extensions);
  cert.sign(key, forge.md.sha256.create());
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
}

let otherCa: { key: forge.pki.rsa.PrivateKey; cert: forge.pki.Certificate } | undefined;

/** A second CA, made afresh in each process and trusted by nothing: what an untrusted issuer is. */
function anotherCa() {
  if (otherCa) return otherCa;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(privateKey.export({ format: 'pem', type: 'pkcs1' }).toString());
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = '02';
  cert.validity.notBefore = new Date('2020-01-01T00:00:00Z');
  cert.validity.notAfter = TEST_CERTIFICATE_END;
  const name = [{ name: 'commonName', value: 'Some other CA (trusted by nothing)' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true },
    { name: 'keyUsage', keyCertSign: true },
  ]);
  cert.sign(key, forge.md.sha256.create());
  otherCa = { key, cert };
  return otherCa;
}

/**
 * A variant of a certificate (DER) for the tests of what a CSD upload refuses: its key and serial,
 * with its subject's OU dropped (an e.firma names no branch), another validity, or signed by a CA
 * nothing trusts (`by: 'other-ca'`), perhaps naming the test CA as its issuer (`naming`).
 */
export function certificateVariant(
  der: Buffer,
  change: {
    dropBranch?: boolean;
    notBefore?: Date;
    notAfter?: Date;
    by?: 'test-ca' | 'other-ca';
    /** The issuer it names, when not its signer: a forgery. */
    naming?: 'test-ca';
    /** Another NoCertificado (20 digits): a renewed CSD of the same emisor. */
    noCertificado?: string;
  },
): Buffer {
  const signer = change.by === 'other-ca' ? anotherCa() : testCa();
  const original = forge.pki.certificateFromAsn1(forge.asn1.fromDer(der.toString('binary')));
  const cert = forge.pki.createCertificate();
  cert.publicKey = original.publicKey;
  // The SAT's serial is the NoCertificado's digits as ASCII bytes, in hex.
  cert.serialNumber = change.noCertificado
    ? Buffer.from(change.noCertificado, 'ascii').toString('hex')
    : original.serialNumber;
  cert.validity.notBefore = change.notBefore ?? original.validity.notBefore;
  cert.validity.notAfter = change.notAfter ?? TEST_CERTIFICATE_END;
  cert.setSubject(original.subject.attributes.filter((a) => !(change.dropBranch && a.shortName === 'OU')));
  cert.setIssuer((change.naming === 'test-ca' ? testCa() : signer).cert.subject.attributes);
  cert.setExtensions(original.extensions);
  cert.sign(signer.key, forge.md.sha256.create());
  return Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary');
}

/**
 * Writes `bytes` to a file in the temporary directory named by their hash (the same bytes, the same
 * path: processes of one run share it) and returns its path.
 */
export function stableTempFile(name: string, bytes: Buffer | string): string {
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const path = join(tmpdir(), `timbra-${hash}-${name}`);
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, bytes);
  renameSync(partial, path);
  return path;
}

/** The test CA's certificate as a file, for `SANDBOX_TRUSTED_CA_FILE`. */
export function testCaFile(): string {
  return stableTempFile('test-ca.pem', testCaPem());
}

/**
 * A CSD for any taxpayer, issued by the test CA: a fresh RSA key (encrypted PKCS#8 under
 * `password`, as the SAT's `.key` files are) and a certificate whose subject is laid out as the
 * SAT's (name, RFC in x500UniqueIdentifier, a branch in OU: a CSD, not an e.firma), valid until
 * 2099. For runs that need more emisores than the SAT's two test taxpayers (the chaos run's third
 * organization, the benchmarks' thousand). The PAC sandbox accepts it only when it trusts the test CA.
 */
export function testCsdFor(
  rfc: string,
  nombre: string,
  options: {
    noCertificado?: string;
    password?: string;
    /** A key pair to certify (one for many taxpayers: making 1,000 RSA keys costs a minute); else a new one. */
    keyPair?: { privateKey: KeyObject; publicKey: KeyObject };
    /** An e.firma (FIEL) instead: the same layout with no branch (no OU). */
    efirma?: boolean;
  } = {},
): { cer: Buffer; key: Buffer; password: string; noCertificado: string } {
  const password = options.password ?? '12345678a';
  const noCertificado =
    options.noCertificado ??
    `3000${BigInt(
      `0x${createHash('sha256')
        .update(options.efirma ? `efirma ${rfc}` : rfc)
        .digest('hex')
        .slice(0, 15)}`,
    )
      .toString()
      .padStart(16, '0')
      .slice(0, 16)}`;
  const { privateKey, publicKey } = options.keyPair ?? generateKeyPairSync('rsa', { modulusLength: 2048 });
  const { key: caKey, cert: caCert } = testCa();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ format: 'pem', type: 'spki' }).toString());
  cert.serialNumber = Buffer.from(noCertificado, 'ascii').toString('hex');
  cert.validity.notBefore = new Date('2024-01-01T00:00:00Z');
  cert.validity.notAfter = TEST_CERTIFICATE_END;
  cert.setSubject([
    { name: 'commonName', value: nombre },
    { type: '2.5.4.41', value: nombre },
    { name: 'organizationName', value: nombre },
    { type: '2.5.4.45', value: rfc },
    { name: 'serialNumber', value: ' ' },
    ...(options.efirma ? [] : [{ shortName: 'OU', value: 'Matriz' }]),
  ]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, nonRepudiation: true },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return {
    cer: Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes(), 'binary'),
    key: privateKey.export({ format: 'der', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: password }),
    password,
    noCertificado,
  };
}

/**
 * An e.firma (FIEL) for any taxpayer, issued by the test CA: what the SAT sandbox's Descarga Masiva
 * authenticates in tests (it trusts the test CA only when told to). The key is encrypted PKCS#8 DER.
 */
export function testEfirmaFor(
  rfc: string,
  nombre: string,
  options: { password?: string } = {},
): { cer: Buffer; key: Buffer; password: string; noCertificado: string } {
  return testCsdFor(rfc, nombre, { ...options, efirma: true });
}
