/**
 * Which e.firma asks the SAT for an organization's record: the one stored for it (sealed under
 * VAULT_KEYS, `ops efirma:upload` or the organizations API), else `<RFC>.cer/.key/.password` in
 * EFIRMA_DIR. A stored e.firma that does not open is an error, never a silent fallback to files.
 */
import type { PrismaClient } from '@timbra/db';
import { currentEfirma, listEfirmas } from '@timbra/db/csds';
import { efirmaFiles, openEfirma, type Efirma, type KeyVault } from '@timbra/cfdi-node';

export interface EfirmaSources {
  vault?: KeyVault | undefined;
  EFIRMA_DIR?: string | undefined;
}

export class EfirmaUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EfirmaUnavailable';
  }
}

/**
 * The organization's e.firma at `at` and where it came from, or undefined when it has none.
 *
 * @throws EfirmaUnavailable when one is stored but VAULT_KEYS is not set, or every stored one has
 *   expired (and EFIRMA_DIR has none); VaultError when it does not open.
 */
export async function efirmaOf(
  prisma: PrismaClient,
  organization: { id: string; rfc: string },
  sources: EfirmaSources,
  at: Date = new Date(),
): Promise<{ efirma: Efirma; source: 'stored' | 'files' } | undefined> {
  const stored = await currentEfirma(prisma, organization.id, at);
  if (stored) {
    if (!sources.vault)
      throw new EfirmaUnavailable(
        `an e.firma of ${organization.rfc} is stored (${stored.noCertificado}) but VAULT_KEYS is not set to open it`,
      );
    return { efirma: await openEfirma(stored, sources.vault), source: 'stored' };
  }
  const files = sources.EFIRMA_DIR ? efirmaFiles(sources.EFIRMA_DIR, organization.rfc) : undefined;
  if (files) return { efirma: files, source: 'files' };
  // One was given and none is valid now: said, never a silent end to the reconciliation.
  const [newest] = (await listEfirmas(prisma, organization.id, at)).sort((a, b) => +b.validTo - +a.validTo);
  if (newest)
    throw new EfirmaUnavailable(
      `the e.firma of ${organization.rfc} (${newest.noCertificado}) is valid from ${newest.validFrom.toISOString()} to ${newest.validTo.toISOString()}, not now: upload its renewal (efirma:upload)`,
    );
  return undefined;
}

/** Whether any e.firma can be found at all: a vault to open stored ones, or a directory of files. */
export const anyEfirmaSource = (sources: EfirmaSources) => Boolean(sources.vault ?? sources.EFIRMA_DIR);
