import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('verifies with openssl (RSA PKCS#1 v1.5, SHA-256 over the UTF-8 cadena)', () => {
    const frozen = freezeComprobante(ingresoRequest(), csd);
    const dir = mkdtempSync(join(tmpdir(), 'timbra-openssl-'));
    try {
      const cert = new X509Certificate(Buffer.from(attr(parseXml(frozen.xml), 'Certificado') ?? '', 'base64'));
      writeFileSync(join(dir, 'cert.pem'), cert.toString());
      execFileSync('openssl', [
        'x509',
        '-in',
        join(dir, 'cert.pem'),
        '-pubkey',
        '-noout',
        '-out',
        join(dir, 'pub.pem'),
      ]);
      writeFileSync(join(dir, 'cadena.txt'), frozen.cadenaOriginal, 'utf8');
      writeFileSync(join(dir, 'sello.bin'), Buffer.from(frozen.sello, 'base64'));
      const verify = (file: string) =>
        spawnSync(
          'openssl',
          ['dgst', '-sha256', '-verify', join(dir, 'pub.pem'), '-signature', join(dir, 'sello.bin'), file],
          { encoding: 'utf8' },
        );
      const ok = verify(join(dir, 'cadena.txt'));
      expect(ok.stdout.trim()).toBe('Verified OK');
      writeFileSync(join(dir, 'tampered.txt'), frozen.cadenaOriginal.replace('6652.95', '6652.96'), 'utf8');
      expect(verify(join(dir, 'tampered.txt')).status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
