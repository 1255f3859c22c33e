import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { certificateVariant, testCaPem, testCsdFiles, testEfirmaFor } from '@timbra/test-support';
import { CfdiError, readCertificates } from '@timbra/cfdi-core';
import { LocalKeyVault, VaultError, openCsd, openEfirma, sealCsd, sealEfirma } from '../src/index.ts';

const keyLine = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
const vault = LocalKeyVault.fromFile(keyLine('2026-12'));
const eku = testCsdFiles('EKU9003173C9');
const emisor = { id: '0190a8f2-0000-7000-8000-000000000001', rfc: 'EKU9003173C9' };
const at = new Date('2026-12-04T12:00:00Z');
const trustedCas = readCertificates(Buffer.from(testCaPem()));

async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof VaultError || error instanceof CfdiError) return error.code;
    throw error;
  }
  return 'none';
}

describe('a CSD sealed for storage and opened again', () => {
  it('opens to the same CSD and files, and keeps neither key nor password in the clear', async () => {
    const { stored, csd } = await sealCsd(eku, emisor, { vault, at, trustedCas });
    expect(stored).toMatchObject({ organizationId: emisor.id, noCertificado: csd.noCertificado, rfc: 'EKU9003173C9' });
    expect(stored.chain).toBe('verified');
    expect(Buffer.from(stored.certificate)).toEqual(eku.cer);
    const json = JSON.stringify(stored.sealed);
    expect(json).not.toContain(eku.password);
    expect(json).not.toContain(eku.key.toString('base64').slice(0, 24));

    const opened = await openCsd(stored, vault);
    expect(opened.csd.noCertificado).toBe(csd.noCertificado);
    expect(opened.credentials).toEqual({ cer: eku.cer, key: eku.key, password: eku.password });
    expect(opened.csd.privateKey.export({ format: 'der', type: 'pkcs8' })).toEqual(
      csd.privateKey.export({ format: 'der', type: 'pkcs8' }),
    );
  });

  it('says when no CA was configured to check the chain', async () => {
    const { stored } = await sealCsd(eku, emisor, { vault, at });
    expect(stored.chain).toBe('unchecked');
  });

  it('refuses bad files before sealing anything, with the check’s code', async () => {
    expect(await failure(sealCsd({ ...eku, password: 'wrong' }, emisor, { vault, at }))).toBe('CSD_WRONG_PASSWORD');
    expect(await failure(sealCsd(eku, { ...emisor, rfc: 'CACX7605101P8' }, { vault, at }))).toBe('CSD_RFC_MISMATCH');
    const foreign = { ...eku, cer: certificateVariant(eku.cer, { by: 'other-ca' }) };
    expect(await failure(sealCsd(foreign, emisor, { vault, at, trustedCas }))).toBe('CSD_UNTRUSTED');
  });

  it('fails closed under another master key, and under a master key file that lost the old key', async () => {
    const { stored } = await sealCsd(eku, emisor, { vault, at });
    expect(await failure(openCsd(stored, LocalKeyVault.fromFile(keyLine('2026-12'))))).toBe('vault_cannot_open');
    expect(await failure(openCsd(stored, LocalKeyVault.fromFile(keyLine('2027-06'))))).toBe('vault_unknown_key');
  });

  it('opens under a rotated master key file that keeps the old key on a later line', async () => {
    const old = `2026-12:${randomBytes(32).toString('base64')}`;
    const { stored } = await sealCsd(eku, emisor, { vault: LocalKeyVault.fromFile(old), at });
    const rotated = LocalKeyVault.fromFile(`${keyLine('2027-06')}\n${old}\n`);
    expect((await openCsd(stored, rotated)).credentials.password).toBe(eku.password);
  });

  it('fails closed on a sealed value moved to another emisor’s or another CSD’s row', async () => {
    const { stored } = await sealCsd(eku, emisor, { vault, at });
    const otherEmisor = { ...stored, organizationId: '0190a8f2-0000-7000-8000-000000000002' };
    expect(await failure(openCsd(otherEmisor, vault))).toBe('vault_cannot_open');
    const otherCsd = { ...stored, noCertificado: '30001000000500003417' };
    expect(await failure(openCsd(otherCsd, vault))).toBe('vault_cannot_open');
  });

  it('refuses a row whose certificate was swapped for another one', async () => {
    const { stored } = await sealCsd(eku, emisor, { vault, at });
    const renewed = certificateVariant(eku.cer, { noCertificado: '30001000000500009999' });
    expect(await failure(openCsd({ ...stored, certificate: renewed }, vault))).toBe('CSD_KEY_MISMATCH');
  });
});

describe('an e.firma sealed for storage and opened again', () => {
  const efirma = testEfirmaFor('EKU9003173C9', 'ESCUELA KEMPER URGATE');
  const now = new Date();

  it('opens to the same files, bound to its organization and certificate', async () => {
    const stored = await sealEfirma(efirma, emisor, { vault, at: now, trustedCas });
    expect(stored).toMatchObject({ noCertificado: efirma.noCertificado, rfc: 'EKU9003173C9', chain: 'verified' });
    const json = JSON.stringify(stored.sealed);
    expect(json).not.toContain(efirma.password);
    expect(json).not.toContain(efirma.key.toString('base64').slice(0, 40));
    const opened = await openEfirma(stored, vault);
    expect([opened.cer, opened.key, opened.password]).toEqual([efirma.cer, efirma.key, efirma.password]);
    // Sealed as an e.firma, it does not open as the same organization's CSD, nor as another's e.firma.
    expect(await failure(openCsd(stored, vault))).toBe('vault_cannot_open');
    const moved = { ...stored, organizationId: '0190a8f2-0000-7000-8000-000000000002' };
    expect(await failure(openEfirma(moved, vault))).toBe('vault_cannot_open');
  });

  it('refuses a CSD handed over as the e.firma, and a CSD sealed as a CSD does not open as one', async () => {
    expect(await failure(sealEfirma(eku, emisor, { vault, at, trustedCas }))).toBe('EFIRMA_IS_CSD');
    const { stored } = await sealCsd(eku, emisor, { vault, at });
    expect(await failure(openEfirma(stored, vault))).toBe('vault_cannot_open');
  });
});
