/**
 * Each organization's share of the stamp queue: the relay's claim when platform mode serves many
 * organizations from one FIFO queue (docs/organizations.md, "Fairness").
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, queryRows, type RawDb } from '../sql.ts';
import { jobGroupSql, type ClaimedOutboxRow } from './outbox.ts';

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
 * relay looks again soon, as the queue drains). `jobGroup`: as `claimOutboxBatch`'s.
 */
export async function claimOutboxShare(
  tx: RawDb,
  limit: number,
  share: OutboxShare,
  jobGroup?: string,
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
        UPDATE outbox o SET status = 'enqueued', enqueued_at = now(), updated_at = now(),
          job_group = ${jobGroupSql(jobGroup)}
        FROM claimed c, invoices i
        WHERE o.id = c.id AND i.id = o.invoice_id
        RETURNING o.id, o.stamp_key, o.kind, o.version, i.serie || '-' || i.folio AS serie_folio,
                  c.available_at
      )
      SELECT room.n AS room, u.* FROM room LEFT JOIN updated u ON true`,
  );
  const room = found[0]?.room ?? 0;
  const rows = claimedRows(found);
  return { rows, capped: room < limit && rows.length >= room };
}

/** A claim's rows (a row with no id: an organization with nothing claimed), oldest first. */
function claimedRows(found: readonly z.infer<typeof claimOutboxShareRow>[]): ClaimedOutboxRow[] {
  return found
    .filter((r) => r.id !== null)
    .sort((a, b) => a.available_at!.getTime() - b.available_at!.getTime())
    .map((r) => ({
      id: r.id!,
      stampKey: r.stamp_key!,
      kind: r.kind!,
      version: r.version!,
      serieFolio: r.serie_folio!,
    }));
}

const claimOutboxAcrossRow = claimOutboxShareRow.extend({ organization_id: col.uuid });

/** One organization's part of a claim across organizations. */
export interface ClaimedOf {
  organizationId: string;
  /** Its rows claimed, oldest first. */
  rows: ClaimedOutboxRow[];
  /** Its share of the queue is full and more may be pending (as `claimOutboxShare`'s). */
  capped: boolean;
}

/**
 * `claimOutboxShare` for several organizations in one statement (platform mode's relay: a round of
 * the organizations with rows pending), in a transaction whose session names them all: each
 * organization's due rows, oldest first, up to `limit` and — with `share` — within its share of the
 * queue, marked `enqueued`. FOR UPDATE SKIP LOCKED, as every claim. `jobGroupOf`: each
 * organization's `stamp-group` job (as `claimOutboxBatch`'s `jobGroup`). @returns one part per
 * organization asked, in the order asked.
 */
export async function claimOutboxAcross(
  tx: RawDb,
  organizationIds: readonly string[],
  limit: number,
  share?: OutboxShare,
  jobGroupOf?: (organizationId: string) => string,
): Promise<ClaimedOf[]> {
  if (organizationIds.length === 0) return [];
  const ids = [...new Set(organizationIds.map((id) => id.toLowerCase()))];
  const groups = ids.map((id) => jobGroupOf?.(id) ?? null);
  const found = await queryRows(
    tx,
    claimOutboxAcrossRow,
    Prisma.sql`
      WITH orgs AS (
        SELECT * FROM unnest(${ids}::uuid[], ${groups}::text[]) AS g(organization_id, job_group)
      ), enqueued AS (
        SELECT organization_id, count(*)::int AS n FROM outbox
        WHERE status = 'enqueued' AND organization_id = ANY(${ids}::uuid[])
          AND enqueued_at > now() - make_interval(secs => ${(share?.windowMs ?? 0) / 1000}::float8)
        GROUP BY organization_id
      ), room AS (
        ${
          share
            ? Prisma.sql`SELECT orgs.organization_id, GREATEST(0, ${share.maxEnqueued}::int - coalesce(enqueued.n, 0))::int AS n
                         FROM orgs LEFT JOIN enqueued USING (organization_id)`
            : Prisma.sql`SELECT organization_id, ${limit}::int AS n FROM orgs`
        }
      ), claimed AS (
        SELECT c.* FROM room CROSS JOIN LATERAL (
          SELECT id FROM outbox
          WHERE organization_id = room.organization_id AND status = 'pending' AND available_at <= now()
          ORDER BY available_at
          LIMIT LEAST(${limit}::int, room.n)
          FOR UPDATE SKIP LOCKED) AS c
      ), updated AS (
        -- The claimed rows by their key (an index probe each): joined to the CTE, Postgres, which
        -- cannot tell how many rows the lateral claim returns, read the whole outbox into a hash.
        UPDATE outbox o SET status = 'enqueued', enqueued_at = now(), updated_at = now(),
          job_group = CASE WHEN o.kind = 'stamp' THEN (SELECT g.job_group FROM orgs g WHERE g.organization_id = o.organization_id) END
        FROM invoices i
        WHERE o.id = ANY (ARRAY(SELECT id FROM claimed)) AND o.organization_id = ANY(${ids}::uuid[])
          AND i.id = o.invoice_id AND i.organization_id = o.organization_id
        RETURNING o.organization_id, o.id, o.stamp_key, o.kind, o.version, i.serie || '-' || i.folio AS serie_folio,
                  o.available_at
      )
      SELECT room.organization_id, room.n AS room, u.id, u.stamp_key, u.kind, u.version, u.serie_folio, u.available_at
      FROM room LEFT JOIN updated u USING (organization_id)`,
  );
  return ids.map((organizationId) => {
    const mine = found.filter((r) => r.organization_id === organizationId);
    const room = mine[0]?.room ?? 0;
    const rows = claimedRows(mine);
    return { organizationId, rows, capped: share !== undefined && room < limit && rows.length >= room };
  });
}
