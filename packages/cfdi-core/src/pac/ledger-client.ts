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
  /** The stamps since `since` (all when absent), and since when the ledger knows every stamp. */
  list(since?: string): Promise<{ stamps: LedgerStamp[]; coversSince: string | undefined }>;
}

/** The sandbox PAC's admin ledger (`GET /__admin/ledger`): what reconciliation compares with. */
export function sandboxLedger(adminUrl: string, token: string): PacLedger {
  return {
    list: async (since) => {
      const answer = await got
        .get(`${adminUrl.replace(/\/$/, '')}/__admin/ledger`, {
          searchParams: { received: 'false', ...(since ? { since } : {}) },
          headers: { authorization: `Bearer ${token}` },
          timeout: { request: 30_000 },
          retry: { limit: 2 },
        })
        .json<{ stamps: LedgerStamp[]; coversSince?: string }>();
      return { stamps: answer.stamps, coversSince: answer.coversSince };
    },
  };
}
