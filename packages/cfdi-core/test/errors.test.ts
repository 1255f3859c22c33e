/** @clock the SAT's own test certificate, valid until 2027-05-18 */
import { describe, expect, it } from '@jest/globals';
import {
  CfdiError,
  CfdiErrorCode,
  CfdiValidationError,
  checkCsdUpload,
  checkEfirmaUpload,
  readCertificates,
  freezeComprobante,
  insertTfd,
  loadCsd,
  parseStampedCfdi,
  parseTfd,
  parseXml,
} from '../src/index.ts';
import { certificateVariant, testCaPem } from '@timbra/test-support';
import { ingresoRequest } from './helpers/requests.ts';
import { csdBytes, loadTestCsd, satTestCsdFiles } from './helpers/sat.ts';

const satCsd = (rfc: 'EKU9003173C9') => {
  const f = satTestCsdFiles(rfc);
  return loadCsd(f.cer, f.key, f.password);
};

const eku = csdBytes('EKU9003173C9');
const cacx = csdBytes('CACX7605101P8');

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof CfdiError) return error.code;
    throw error;
  }
  return undefined;
}

describe('every error code has a trigger', () => {
  const cases: [CfdiErrorCode, () => unknown][] = [
    [
      CfdiErrorCode.InvalidRequest,
      () => freezeComprobante({ ...ingresoRequest(), folio: '' }, loadTestCsd('EKU9003173C9')),
    ],
    [CfdiErrorCode.CsdWrongPassword, () => loadCsd(eku.cer, eku.key, 'not-the-password')],
    [CfdiErrorCode.CsdKeyMismatch, () => loadCsd(eku.cer, cacx.key, cacx.password)],
    [
      CfdiErrorCode.CsdExpired,
      // The SAT's own test CSD ends on 2027-05-18: a document dated after it is refused.
      () => freezeComprobante({ ...ingresoRequest(), issuedAt: '2027-06-01T12:00:00Z' }, satCsd('EKU9003173C9')),
    ],
    [CfdiErrorCode.CsdRfcMismatch, () => freezeComprobante(ingresoRequest(), loadTestCsd('CACX7605101P8'))],
    [CfdiErrorCode.CsdUnreadable, () => loadCsd(Buffer.from('not a certificate'), eku.key, eku.password)],
    [
      CfdiErrorCode.CsdIsEfirma,
      () =>
        checkCsdUpload(
          { ...eku, cer: certificateVariant(eku.cer, { dropBranch: true }) },
          { rfc: 'EKU9003173C9', at: new Date() },
        ),
    ],
    [CfdiErrorCode.EfirmaIsCsd, () => checkEfirmaUpload(eku, { rfc: 'EKU9003173C9', at: new Date() })],
    [
      CfdiErrorCode.CsdUntrusted,
      () =>
        checkCsdUpload(
          { ...eku, cer: certificateVariant(eku.cer, { by: 'other-ca' }) },
          { rfc: 'EKU9003173C9', at: new Date(), trustedCas: readCertificates(Buffer.from(testCaPem())) },
        ),
    ],
    [CfdiErrorCode.InvalidXml, () => parseXml('<cfdi:Comprobante><unclosed></cfdi:Comprobante>')],
    [
      CfdiErrorCode.InvalidTfd,
      () => parseTfd('<tfd:TimbreFiscalDigital xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" Version="1.1"/>'),
    ],
  ];

  it('covers every code of CfdiErrorCode', () => {
    expect(new Set(cases.map(([code]) => code))).toEqual(new Set(Object.values(CfdiErrorCode)));
  });

  it.each(cases)('%s', (code, trigger) => {
    expect(codeOf(trigger)).toBe(code);
  });

  it('reports a .key that is not PKCS#8 as unreadable, not as a wrong password', () => {
    expect(codeOf(() => loadCsd(eku.cer, Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]), 'x'))).toBe(
      CfdiErrorCode.CsdUnreadable,
    );
  });

  it('never puts the CSD password in an error', () => {
    try {
      loadCsd(eku.cer, eku.key, 'S3cr3t-Passw0rd');
      throw new Error('expected a failure');
    } catch (error) {
      const text = `${(error as Error).message} ${String((error as Error).cause)} ${JSON.stringify(error)}`;
      expect(text).not.toContain('S3cr3t-Passw0rd');
    }
  });

  it('refuses a DOCTYPE (no external or internal entities are ever expanded)', () => {
    const xxe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>';
    expect(codeOf(() => parseXml(xxe))).toBe(CfdiErrorCode.InvalidXml);
  });

  it('refuses a stamped CFDI without TFD, and a second TFD insertion', () => {
    const frozen = freezeComprobante(ingresoRequest(), loadTestCsd('EKU9003173C9'));
    expect(codeOf(() => parseStampedCfdi(frozen.xml))).toBe(CfdiErrorCode.InvalidTfd);
    const tfd = '<tfd:TimbreFiscalDigital xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital" Version="1.1"/>';
    expect(codeOf(() => insertTfd(insertTfd(frozen.xml, tfd), tfd))).toBe(CfdiErrorCode.InvalidXml);
  });

  it('lists every problem of a request at once, with paths', () => {
    const request = { ...ingresoRequest(), formaPago: '77', moneda: 'ZZZ', lugarExpedicion: '123' };
    try {
      freezeComprobante(request, loadTestCsd('EKU9003173C9'));
      throw new Error('expected a failure');
    } catch (error) {
      expect(error).toBeInstanceOf(CfdiValidationError);
      const paths = (error as CfdiValidationError).issues.map((i) => i.path);
      expect(paths).toEqual(expect.arrayContaining(['lugarExpedicion']));
    }
    // Shape errors come first, then what the request must say, then the SAT rules of its document;
    // within each stage every problem is listed together.
    try {
      freezeComprobante({ ...ingresoRequest(), timeZone: 'Mars/Olympus', moneda: 'ZZZ' }, loadTestCsd('EKU9003173C9'));
      throw new Error('expected a failure');
    } catch (error) {
      const paths = (error as CfdiValidationError).issues.map((i) => i.path);
      expect(paths).toEqual(expect.arrayContaining(['timeZone', 'moneda']));
    }
    try {
      freezeComprobante({ ...ingresoRequest(), formaPago: '77', exportacion: '09' }, loadTestCsd('EKU9003173C9'));
      throw new Error('expected a failure');
    } catch (error) {
      const rules = (error as CfdiValidationError).issues.map((i) => i.rule);
      expect(rules).toEqual(expect.arrayContaining(['CFDI40104', 'CFDI40123']));
    }
  });
});
