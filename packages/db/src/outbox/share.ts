/**
 * Each organization's share of the stamp queue: the relay's claim when platform mode serves many
 * organizations from one FIFO queue (docs/organizations.md, "Fairness").
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, queryRows, type RawDb } from '../sql.ts';
import type { ClaimedOutboxRow } from './outbox.ts';

const claimOutboxShareRow = z.object({
  room: col.int,
  id: col.uuid.nullable(),
  stamp_key: col.text.nullable(),
  kind: z.enum(['stamp', 'cancel']).nullable(),
  version: col.int.nullable(),
  serie_folio: col.text.nullable(),
  available_at: z.date().nullable(),
});

/** How many of an organization's jobs may wait in the stamp queue at once (`claimOutboxShare`). */
export interface OutboxShare {
  /** At most this many rows enqueued (RELAY_MAX_ENQUEUED_PER_ORGANIZATION). */
  maxEnqueued: number;
  /**
   * Counting only rows enqueued this recently: a row whose job Redis lost stays enqueued until the
   * sweeper notices, and must not hold the organization's share for that long.
   */
  windowMs: number;
}

/**
 * As `claimOutboxBatch`, within the organization's share of the stamp queue: it claims no more than
 * `share.maxEnqueued` less the rows it has enqueued (within `share.windowMs`), so one organization's
 * backlog waits in Postgres, not in front of every other organization's jobs. Row-level security
 * counts the organization's rows only. `capped`: its share is full and more may be pending (the
 * relay looks again soon, as the queue drains).
 */
export async function claimOutboxShare(
  tx: RawDb,
  limit: number,
  share: OutboxShare,
): Promise<{ rows: ClaimedOutboxRow[]; capped: boolean }> {
  const found = await queryRows(
    tx,
    claimOutboxShareRow,
    Prisma.sql`
      WITH room AS (
        SELECT GREATEST(0, ${share.maxEnqueued}::int - count(*))::int AS n FROM (
          SELECT 1 FROM outbox
          WHERE status = 'enqueued' AND enqueued_at > now() - make_interval(secs => ${share.windowMs / 1000}::float8)
          LIMIT ${share.maxEnqueued}::int) e
      ), claimed AS (
        SELECT id, available_at FROM outbox
        WHERE status = 'pending' AND available_at <= now()
        ORDER BY available_at
        LIMIT LEAST(${limit}::int, (SELECT n FROM room))
        FOR UPDATE SKIP LOCKED
      ), updated AS (
        UPDATE outbox o SET status = 'enqueued', enqueued_at = now(), updated_at = now()
        FROM claimed c, invoices i
        WHERE o.id = c.id AND i.id = o.invoice_id
        RETURNING o.id, o.stamp_key, o.kind, o.version, i.serie || '-' || i.folio AS serie_folio,
                  c.available_at
      )
      SELECT room.n AS room, u.* FROM room LEFT JOIN updated u ON true`,
  );
  const room = found[0]?.room ?? 0;
  const rows = found
    .filter((r) => r.id !== null)
    .sort((a, b) => a.available_at!.getTime() - b.available_at!.getTime())
    .map((r) => ({
      id: r.id!,
      stampKey: r.stamp_key!,
      kind: r.kind!,
      version: r.version!,
      serieFolio: r.serie_folio!,
    }));
  return { rows, capped: room < limit && rows.length >= room };
}
