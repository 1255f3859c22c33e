/**
 * The organizations' e.firmas (FIEL) as data: the one place they are stored, listed and chosen.
 * What is stored was checked by cfdi-core (checkEfirmaUpload) and sealed by cfdi-node (sealEfirma);
 * this module never sees the private key or its password in the clear.
 */
import { Prisma, type PrismaClient } from '../generated/client.ts';

/** An e.firma as stored: the certificate's facts and bytes, the sealed key and password. */
export interface StoredEfirma {
  organizationId: string;
  noCertificado: string;
  rfc: string;
  validFrom: Date;
  validTo: Date;
  certificate: Uint8Array;
  /** cfdi-node's SealedSecret, as JSON. */
  sealed: object;
  chain: 'verified' | 'unchecked';
  uploadedAt: Date;
}

/** An e.firma as lists show it: no sealed bytes, and whether it is the one in use at `at`. */
export type EfirmaView = Omit<StoredEfirma, 'certificate' | 'sealed'> & { current: boolean };

export class EfirmaAlreadyStored extends Error {
  constructor(readonly noCertificado: string) {
    super(`the e.firma ${noCertificado} is stored already`);
    this.name = 'EfirmaAlreadyStored';
  }
}

type Row = Omit<StoredEfirma, 'sealed' | 'chain'> & { sealed: Prisma.JsonValue; chain: string };
const asStored = (row: Row): StoredEfirma => ({
  ...row,
  sealed: row.sealed as object,
  chain: row.chain as StoredEfirma['chain'],
});

/** The one rule for which e.firma is in use at `at`: of those valid then, the newest uploaded. */
export function chooseCurrentEfirma<T extends Pick<StoredEfirma, 'validFrom' | 'validTo' | 'uploadedAt'>>(
  efirmas: readonly T[],
  at: Date,
): T | undefined {
  const t = at.getTime();
  return efirmas
    .filter((e) => e.validFrom.getTime() <= t && t < e.validTo.getTime())
    .sort((a, b) => b.uploadedAt.getTime() - a.uploadedAt.getTime())[0];
}

/** Stores a checked and sealed e.firma. @throws EfirmaAlreadyStored when the organization has this one. */
export async function storeEfirma(
  prisma: PrismaClient,
  efirma: Omit<StoredEfirma, 'uploadedAt'>,
): Promise<StoredEfirma> {
  try {
    const row = await prisma.efirma.create({
      data: {
        organizationId: efirma.organizationId,
        noCertificado: efirma.noCertificado,
        rfc: efirma.rfc,
        validFrom: efirma.validFrom,
        validTo: efirma.validTo,
        certificate: Buffer.from(efirma.certificate),
        sealed: efirma.sealed,
        chain: efirma.chain,
      },
    });
    return asStored(row);
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
      throw new EfirmaAlreadyStored(efirma.noCertificado);
    throw error;
  }
}

/** The organization's e.firmas, newest uploaded first, each saying whether it is the one in use at `at`. */
export async function listEfirmas(prisma: PrismaClient, organizationId: string, at: Date): Promise<EfirmaView[]> {
  const rows = await prisma.efirma.findMany({
    where: { organizationId },
    orderBy: { uploadedAt: 'desc' },
    omit: { certificate: true, sealed: true },
  });
  const current = chooseCurrentEfirma(rows, at);
  return rows.map((r) => ({ ...r, chain: r.chain as StoredEfirma['chain'], current: r === current }));
}

/** The e.firma the organization's requests to the SAT are signed with at `at`, or undefined. */
export async function currentEfirma(
  prisma: PrismaClient,
  organizationId: string,
  at: Date,
): Promise<StoredEfirma | undefined> {
  const rows = await prisma.efirma.findMany({
    where: { organizationId, validFrom: { lte: at }, validTo: { gt: at } },
    orderBy: { uploadedAt: 'desc' },
    take: 1,
  });
  return chooseCurrentEfirma(rows.map(asStored), at);
}

/**
 * The e.firma whose end an organization must hear of at `at`: the one in use (`chooseCurrentEfirma`),
 * else, when none is (every one expired, or not yet valid), the one that ends last.
 */
export function efirmaToWatch<T extends Pick<StoredEfirma, 'validFrom' | 'validTo' | 'uploadedAt'>>(
  efirmas: readonly T[],
  at: Date,
): T | undefined {
  return chooseCurrentEfirma(efirmas, at) ?? [...efirmas].sort((a, b) => b.validTo.getTime() - a.validTo.getTime())[0];
}
