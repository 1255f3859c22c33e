import { PacHttp } from './http.ts';

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

/**
 * The sandbox PAC's admin ledger (`GET /__admin/ledger`): what reconciliation compares with. A read:
 * a failed attempt is tried again, twice.
 */
export function sandboxLedger(adminUrl: string, token: string): PacLedger {
  return {
    list: async (since) => {
      const http = new PacHttp(adminUrl, { connectMs: 5_000, responseMs: 30_000 });
      const query = new URLSearchParams({ received: 'false', ...(since ? { since } : {}) });
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            const answer = await http.get(`__admin/ledger?${query.toString()}`, {
              headers: { authorization: `Bearer ${token}` },
            });
            if (answer.statusCode !== 200) throw new Error(`the ledger answered HTTP ${answer.statusCode}`);
            const body = JSON.parse(answer.body) as { stamps: LedgerStamp[]; coversSince?: string };
            return { stamps: body.stamps, coversSince: body.coversSince };
          } catch (error) {
            if (attempt >= 3) throw error;
            await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
          }
        }
      } finally {
        http.close();
      }
    },
  };
}
