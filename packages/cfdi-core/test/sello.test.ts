import { describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { attr, freezeComprobante, parseXml, verificarSello } from '../src/index.ts';
import { ingresoRequest, pagoRequest } from './helpers/requests.ts';
import { loadTestCsd } from './helpers/sat.ts';

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
