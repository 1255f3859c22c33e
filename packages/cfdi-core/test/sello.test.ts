/** @clock the SAT's own test certificate, valid until 2027-05-18 */
import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import {
  attr,
  csdExpiry,
  csdExpiryWarning,
  freezeComprobante,
  loadCsd,
  parseXml,
  verificarSello,
} from '../src/index.ts';
import { ingresoRequest, pagoRequest } from './helpers/requests.ts';
import { loadTestCsd, satTestCsdFiles } from './helpers/sat.ts';

const csd = loadTestCsd('EKU9003173C9');

describe('sello', () => {
  it('verifies with the certificate embedded in the XML, over the cadena of the XML as written', () => {
    for (const request of [ingresoRequest(), pagoRequest()]) {
      const frozen = freezeComprobante(request, csd);
      const root = parseXml(frozen.xml);
      const cert = new X509Certificate(Buffer.from(attr(root, 'Certificado') ?? '', 'base64'));
      expect(attr(root, 'NoCertificado')).toBe('30001000000500003416');
      expect(attr(root, 'Sello')).toBe(frozen.sello);
      expect(verificarSello(frozen.cadenaOriginal, frozen.sello, cert.publicKey)).toBe(true);
      expect(verificarSello(`${frozen.cadenaOriginal} `, frozen.sello, cert.publicKey)).toBe(false);
    }
  });

  it('verifies with node-forge, an independent RSA in pure JavaScript (PKCS#1 v1.5, SHA-256 over the UTF-8 cadena)', () => {
    const frozen = freezeComprobante(ingresoRequest(), csd);
    const der = Buffer.from(attr(parseXml(frozen.xml), 'Certificado') ?? '', 'base64');
    const certificate = forge.pki.certificateFromAsn1(forge.asn1.fromDer(der.toString('binary')));
    const publicKey = certificate.publicKey as forge.pki.rsa.PublicKey;
    const signature = Buffer.from(frozen.sello, 'base64').toString('binary');
    const digest = (text: string) => forge.md.sha256.create().update(text, 'utf8').digest().bytes();
    expect(publicKey.verify(digest(frozen.cadenaOriginal), signature)).toBe(true);
    expect(publicKey.verify(digest(frozen.cadenaOriginal.replace('6652.95', '6652.96')), signature)).toBe(false);
  });
});

describe('CSD expiry (the start-up warning, the metric and `ops csd:check` share it)', () => {
  // The SAT's own test CSD of EKU9003173C9 is valid until 2027-05-18T11:43:51Z; each case at a fixed instant.
  const files = satTestCsdFiles('EKU9003173C9');
  const eku = loadCsd(files.cer, files.key, files.password);
  it('is quiet far from the end, warns within 30 days, and says expired after', () => {
    expect(eku.validTo.toISOString()).toBe('2027-05-18T11:43:51.000Z');
    const far = csdExpiry(eku, new Date('2027-04-01T00:00:00Z'));
    expect(far).toMatchObject({ expiring: false, expired: false, daysLeft: 47 });
    expect(csdExpiryWarning(far)).toBeUndefined();
    const near = csdExpiry(eku, new Date('2027-05-01T00:00:00Z'));
    expect(near).toMatchObject({ expiring: true, expired: false, daysLeft: 17 });
    expect(csdExpiryWarning(near)).toMatch(/expires on 2027-05-18T11:43:51\.000Z \(17 days\): renew it at the SAT/);
    const past = csdExpiry(eku, new Date('2027-06-01T00:00:00Z'));
    expect(past).toMatchObject({ expiring: true, expired: true });
    expect(past.secondsLeft).toBeLessThan(0);
    expect(csdExpiryWarning(past)).toMatch(/expired on 2027-05-18/);
    expect(csdExpiry(eku, new Date('2027-04-01T00:00:00Z'), 60).expiring).toBe(true);
  });
});
