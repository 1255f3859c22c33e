import { instantOf, parseTfd } from '@timbra/cfdi-core';
import { type LedgerStamp } from '@timbra/cfdi-node';

export { sandboxLedger, type LedgerStamp, type PacLedger } from '@timbra/cfdi-node';

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

/**
 * When a stamp was made by the PAC's clock — its TFD's FechaTimbrado (Mexico City time, to the
 * second) — the clock its ledger's window is in. Our `stamped_at` is the database's clock: comparing
 * it with the ledger's would mix two clocks.
 */
export function stampInstant(tfdXml: string): Date {
  return instantOf(parseTfd(tfdXml).tfd.fechaTimbrado, 'America/Mexico_City');
}

/** What `reconcile --fix` proposes for a duplicate: cancel `cancel` (motivo 01) in favour of `keep`, our invoice's UUID. */
export type DuplicateFix =
  { keep: string; invoiceId: string; cancel: string[] } | { skipped: string[]; reason: string };

/**
 * The repair of each duplicate: the UUID our database holds is kept; every other UUID of the group
 * is cancelled with motivo 01 pointing at it. Never both: a group with none of its UUIDs in our
 * database, or more than one, is left to a person (skipped, with the reason).
 */
export function proposeFixes(
  duplicates: Reconciliation['duplicates'],
  invoiceOf: ReadonlyMap<string, string>,
): DuplicateFix[] {
  const seen = new Set<string>();
  const fixes: DuplicateFix[] = [];
  for (const d of duplicates) {
    const uuids = [...new Set(d.uuids.map((u) => u.toUpperCase()))];
    const ours = uuids.filter((u) => invoiceOf.has(u));
    if (ours.length !== 1) {
      fixes.push({
        skipped: uuids,
        reason: ours.length === 0 ? 'none of these UUIDs is in our database' : 'more than one is in our database',
      });
      continue;
    }
    const keep = ours[0]!;
    const cancel = uuids.filter((u) => u !== keep && !seen.has(u));
    cancel.forEach((u) => seen.add(u));
    if (cancel.length > 0) fixes.push({ keep, invoiceId: invoiceOf.get(keep)!, cancel });
  }
  return fixes;
}
