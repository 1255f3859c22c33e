import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { certificateVariant, testCaPem, testCsdFiles, testCsdFor, testEfirmaFor } from '@timbra/test-support';
import { CfdiError, checkCsdUpload, checkEfirmaUpload, readCertificates, satCertificateKind } from '../src/index.ts';

const eku = testCsdFiles('EKU9003173C9');
const cacx = testCsdFiles('CACX7605101P8');
const trustedCas = readCertificates(Buffer.from(testCaPem()));
const now = new Date('2026-12-04T12:00:00Z');
const expected = { rfc: 'EKU9003173C9', at: now, trustedCas };

function refusal(
  files: { cer: Buffer; key: Buffer; password: string },
  exp = expected,
  check = checkCsdUpload,
): string | undefined {
  try {
    check(files, exp);
  } catch (error) {
    if (error instanceof CfdiError) return error.code;
    throw error;
  }
  return undefined;
}

describe('a CSD upload', () => {
  it('takes the emisor’s own CSD, issued by a trusted CA, and says the chain was verified', () => {
    const checked = checkCsdUpload(eku, expected);
    expect(checked.chain).toBe('verified');
    expect(checked.csd.rfc).toBe('EKU9003173C9');
    expect(checked.csd.noCertificado).toBe('30001000000500003416');
  });

  it("takes a test CSD made for any taxpayer (the benchmarks' and the chaos run's emisores) as the SAT's", () => {
    const made = testCsdFor('TIM010101AB1', 'TIMBRA PRUEBAS');
    const { csd, chain } = checkCsdUpload(made, { rfc: 'TIM010101AB1', at: new Date(), trustedCas });
    expect([csd.rfc, csd.noCertificado, chain]).toEqual(['TIM010101AB1', made.noCertificado, 'verified']);
    expect(made.noCertificado).toMatch(/^[0-9]{20}$/);
    expect(satCertificateKind(csd.certificate)).toBe('csd');
    // Another taxpayer's is another key and another NoCertificado; the wrong password does not open it.
    const other = testCsdFor('TIM020202CD2', 'OTRA');
    expect(other.noCertificado).not.toBe(made.noCertificado);
    expect(() => checkCsdUpload({ ...made, password: 'x' }, { rfc: 'TIM010101AB1', at: new Date() })).toThrow(
      CfdiError,
    );
  });

  it('says, when no CA is configured, that the chain was not checked', () => {
    expect(checkCsdUpload(eku, { rfc: 'EKU9003173C9', at: now }).chain).toBe('unchecked');
  });

  it.each([
    ['bytes that are not a certificate', { ...eku, cer: Buffer.from('not a cer') }, 'CSD_UNREADABLE'],
    ['bytes that are not a key', { ...eku, key: Buffer.from('not a key') }, 'CSD_UNREADABLE'],
    ['a wrong password', { ...eku, password: 'wrong-password' }, 'CSD_WRONG_PASSWORD'],
    ['another taxpayer’s key', { ...eku, key: cacx.key }, 'CSD_KEY_MISMATCH'],
    [
      'an e.firma (no branch in its subject)',
      { ...eku, cer: certificateVariant(eku.cer, { dropBranch: true }) },
      'CSD_IS_EFIRMA',
    ],
    ['another taxpayer’s CSD', cacx, 'CSD_RFC_MISMATCH'],
    [
      'a CSD that has expired',
      { ...eku, cer: certificateVariant(eku.cer, { notAfter: new Date('2026-01-01T00:00:00Z') }) },
      'CSD_EXPIRED',
    ],
    [
      'a CSD not valid yet',
      { ...eku, cer: certificateVariant(eku.cer, { notBefore: new Date('2027-01-01T00:00:00Z') }) },
      'CSD_EXPIRED',
    ],
    [
      'a CSD issued by a CA nothing trusts',
      { ...eku, cer: certificateVariant(eku.cer, { by: 'other-ca' }) },
      'CSD_UNTRUSTED',
    ],
  ])('refuses %s', (_what, files, code) => {
    expect(refusal(files)).toBe(code);
  });

  it('refuses a certificate whose issuer is a trusted CA’s name but not its signature', () => {
    // Signed by another CA, with the trusted CA's name written as its issuer: the names match.
    const other = certificateVariant(eku.cer, { by: 'other-ca', naming: 'test-ca' });
    const trusted = new X509Certificate(testCaPem());
    expect(new X509Certificate(other).checkIssued(trusted)).toBe(true);
    expect(refusal({ ...eku, cer: other })).toBe('CSD_UNTRUSTED');
  });

  it('tells a CSD from an e.firma by the branch its subject names', () => {
    expect(satCertificateKind(new X509Certificate(eku.cer))).toBe('csd');
    expect(satCertificateKind(new X509Certificate(certificateVariant(eku.cer, { dropBranch: true })))).toBe('efirma');
  });

  it('reads a bundle of trusted CAs, PEM or DER, and refuses what is neither', () => {
    const pem = testCaPem();
    expect(readCertificates(Buffer.from(pem + '\n' + pem))).toHaveLength(2);
    expect(readCertificates(new X509Certificate(pem).raw)).toHaveLength(1);
    expect(() => readCertificates(Buffer.from('nothing'))).toThrow(CfdiError);
  });
});

describe('an e.firma upload', () => {
  const efirma = testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE');
  const at = new Date();
  const mine = { rfc: 'EKU9003173C9', at, trustedCas };

  it('takes the taxpayer’s e.firma issued by a trusted CA, and says the chain was verified', () => {
    const checked = checkEfirmaUpload(efirma, mine);
    expect([checked.csd.rfc, checked.csd.noCertificado, checked.chain]).toEqual([
      'EKU9003173C9',
      efirma.noCertificado,
      'verified',
    ]);
    expect(checkEfirmaUpload(efirma, { rfc: 'EKU9003173C9', at }).chain).toBe('unchecked');
  });

  it.each([
    ['a CSD (it names a branch)', testCsdFor('EKU9003173C9', 'ESCUELA KEMPER URGATE'), mine, 'EFIRMA_IS_CSD'],
    ['a wrong password', { ...efirma, password: 'wrong-password' }, mine, 'CSD_WRONG_PASSWORD'],
    ['another taxpayer’s e.firma', efirma, { ...mine, rfc: 'CACX7605101P8' }, 'CSD_RFC_MISMATCH'],
    [
      'an expired e.firma',
      { ...efirma, cer: certificateVariant(efirma.cer, { notAfter: new Date(at.getTime() - 86_400_000) }) },
      mine,
      'CSD_EXPIRED',
    ],
    [
      'an e.firma issued by a CA nothing trusts',
      { ...efirma, cer: certificateVariant(efirma.cer, { by: 'other-ca' }) },
      mine,
      'CSD_UNTRUSTED',
    ],
  ])('refuses %s', (_what, files, exp, code) => {
    expect(refusal(files, exp, checkEfirmaUpload)).toBe(code);
  });
});
