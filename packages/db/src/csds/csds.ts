/**
 * The emisor's CSDs as data: the one place they are stored, listed and chosen. What is stored was
 * checked by cfdi-core (checkCsdUpload) and sealed by cfdi-node (sealCsd) before it reaches here;
 * this module never sees the private key or its password in the clear.
 */
import { Prisma, type PrismaClient } from '../generated/client.ts';

/** A CSD as stored: the certificate's facts and bytes, the sealed key and password. */
export interface StoredCsd {
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
  activeFrom: Date;
}

/** A CSD as lists show it: no sealed bytes, and whether it is the one sealing at `at`. */
export type CsdView = Omit<StoredCsd, 'certificate' | 'sealed'> & { active: boolean };

export class CsdAlreadyStored extends Error {
  constructor(readonly noCertificado: string) {
    super(`the CSD ${noCertificado} is stored already`);
    this.name = 'CsdAlreadyStored';
  }
}

const asStored = (row: {
  organizationId: string;
  noCertificado: string;
  rfc: string;
  validFrom: Date;
  validTo: Date;
  certificate: Uint8Array;
  sealed: Prisma.JsonValue;
  chain: string;
  uploadedAt: Date;
  activeFrom: Date;
}): StoredCsd => ({ ...row, sealed: row.sealed as object, chain: row.chain as StoredCsd['chain'] });

/**
 * The one rule for which CSD seals at `at`: of those whose activeFrom has come and whose validity
 * covers `at`, the newest activated. An expired or not-yet-valid CSD never seals; a new one takes
 * over from its activeFrom while the old is still valid (rotation).
 */
export function chooseActive<T extends Pick<StoredCsd, 'validFrom' | 'validTo' | 'activeFrom'>>(
  csds: readonly T[],
  at: Date,
): T | undefined {
  const t = at.getTime();
  return csds
    .filter((c) => c.activeFrom.getTime() <= t && c.validFrom.getTime() <= t && t < c.validTo.getTime())
    .sort((a, b) => b.activeFrom.getTime() - a.activeFrom.getTime())[0];
}

/**
 * The CSD whose end an organization must hear of at `at`: the one sealing (`chooseActive`), else,
 * when none seals (every one expired, or not yet active), the one that ends last.
 */
export function csdToWatch<T extends Pick<StoredCsd, 'validFrom' | 'validTo' | 'activeFrom'>>(
  csds: readonly T[],
  at: Date,
): T | undefined {
  return chooseActive(csds, at) ?? [...csds].sort((a, b) => b.validTo.getTime() - a.validTo.getTime())[0];
}

/** Stores a checked and sealed CSD. @throws CsdAlreadyStored when the emisor has this NoCertificado. */
export async function storeCsd(
  prisma: PrismaClient,
  csd: Omit<StoredCsd, 'uploadedAt' | 'activeFrom'> & { activeFrom?: Date },
): Promise<StoredCsd> {
  try {
    const row = await prisma.csd.create({
      data: {
        organizationId: csd.organizationId,
        noCertificado: csd.noCertificado,
        rfc: csd.rfc,
        validFrom: csd.validFrom,
        validTo: csd.validTo,
        certificate: Buffer.from(csd.certificate),
        sealed: csd.sealed,
        chain: csd.chain,
        ...(csd.activeFrom ? { activeFrom: csd.activeFrom } : {}),
      },
    });
    return asStored(row);
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002')
      throw new CsdAlreadyStored(csd.noCertificado);
    throw error;
  }
}

/** The emisor's CSDs, newest activated first, each saying whether it seals at `at`. */
export async function listCsds(prisma: PrismaClient, organizationId: string, at: Date): Promise<CsdView[]> {
  const rows = await prisma.csd.findMany({
    where: { organizationId },
    orderBy: { activeFrom: 'desc' },
    omit: { certificate: true, sealed: true },
  });
  const active = chooseActive(rows, at);
  return rows.map((r) => ({ ...r, chain: r.chain as StoredCsd['chain'], active: r === active }));
}

/** The CSD that seals the emisor's documents at `at` (chooseActive), or undefined when none does. */
/**
 * The CSD an organization seals with at `at`: its own active one, else — a test twin without one —
 * its live organization's (`liveId`, read on that organization's client from `clientOf`).
 */
export async function sealingCsd(
  clientOf: (organizationId: string) => PrismaClient,
  organization: { id: string; liveId: string | null },
  at: Date,
): Promise<StoredCsd | undefined> {
  return (
    (await activeCsd(clientOf(organization.id), organization.id, at)) ??
    (organization.liveId ? await activeCsd(clientOf(organization.liveId), organization.liveId, at) : undefined)
  );
}

export async function activeCsd(
  prisma: PrismaClient,
  organizationId: string,
  at: Date,
): Promise<StoredCsd | undefined> {
  const rows = await prisma.csd.findMany({
    where: { organizationId, activeFrom: { lte: at }, validFrom: { lte: at }, validTo: { gt: at } },
    orderBy: { activeFrom: 'desc' },
    take: 1,
  });
  const row = chooseActive(rows.map(asStored), at);
  return row;
}
