import got from 'got';

/** A stamp as a PAC's ledger (or lookup) reports it. */
export interface LedgerStamp {
  uuid: string;
  /** The PAC instance / account that issued it. */
  instance: string;
  /** Our idempotency key, when the PAC recorded it (SW customid). */
  customid?: string;
  /** sha256 of the cadena original, when the PAC exposes it. */
  cadenaHash?: string;
  stampedAt?: string;
}

/** Where a PAC's stamps are listed: the sandbox's ledger here; a real PAC's report or lookup later. */
export interface PacLedger {
  list(since?: string): Promise<LedgerStamp[]>;
}

/** The sandbox's admin ledger (`GET /__admin/ledger`). */
export function sandboxLedger(adminUrl: string, token: string): PacLedger {
  return {
    list: async (since) =>
      (
        await got
          .get(`${adminUrl.replace(/\/$/, '')}/__admin/ledger`, {
            searchParams: { received: 'false', ...(since ? { since } : {}) },
            headers: { authorization: `Bearer ${token}` },
            timeout: { request: 30_000 },
          })
          .json<{ stamps: LedgerStamp[] }>()
      ).stamps,
  };
}

export interface Reconciliation {
  stamps: number;
  /** Stamps the PAC issued that our database does not know (paid timbres, invisible to us). */
  orphans: LedgerStamp[];
  /** Documents with more than one UUID: the same cadena, or the same stamp key, stamped twice. */
  duplicates: { by: 'cadena' | 'stamp_key'; key: string; uuids: string[] }[];
}

/**
 * Compares a PAC's ledger with our invoices (pure). `known` is every UUID our database holds,
 * `keyOf` maps a UUID we hold to its stamp key.
 */
export function reconcile(ledger: readonly LedgerStamp[], known: ReadonlySet<string>): Reconciliation {
  const orphans = ledger.filter((s) => !known.has(s.uuid.toUpperCase()));
  const group = (key: (s: LedgerStamp) => string | undefined) => {
    const map = new Map<string, string[]>();
    for (const s of ledger) {
      const k = key(s);
      if (k) map.set(k, [...(map.get(k) ?? []), s.uuid]);
    }
    return [...map.entries()].filter(([, uuids]) => uuids.length > 1);
  };
  return {
    stamps: ledger.length,
    orphans,
    duplicates: [
      ...group((s) => s.cadenaHash).map(([key, uuids]) => ({ by: 'cadena' as const, key, uuids })),
      ...group((s) => s.customid).map(([key, uuids]) => ({ by: 'stamp_key' as const, key, uuids })),
    ],
  };
}
