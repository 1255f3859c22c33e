/**
 * What waits, an organization at a time: the figures behind the worker's backlog gauges and alerts
 * (outbox rows, dead letters, invoices that need data or are late, corrections proving, reversed
 * refunds standing, deliveries). One statement, the database function `timbra_backlog` (migration
 * 20261226000000), owns them: an organization's session reads its own (`backlogOf`); a session that
 * names none reads every organization's (`backlogEverywhere`, platform mode's worker). Counts and
 * ages only.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, queryRows, type RawDb } from '../sql.ts';

/** When an invoice counts as late: its Fecha leaves the PACs' window (`windowMs`) within `marginMs`. */
export interface LateRule {
  windowMs: number;
  marginMs: number;
}

const backlogRow = z.object({
  organization: col.uuid,
  outbox_pending: col.int,
  outbox_enqueued: col.int,
  outbox_held: col.int,
  outbox_failed: col.int,
  outbox_oldest_age: z.number(),
  needs_data: col.int,
  needs_data_oldest_age: z.number(),
  late: col.int,
  corrections_proving: col.int,
  corrections_oldest_age: z.number(),
  reversed_refunds_standing: col.int,
  email_pending: col.int,
  email_oldest_age: z.number(),
  email_dead: col.int,
  webhook_pending: col.int,
  webhook_oldest_age: z.number(),
  webhook_dead: col.int,
  endpoints_disabled: col.int,
});

/** A delivery channel's backlog: not delivered yet, the oldest of them (s), dead with no replay since. */
export interface ChannelBacklog {
  pending: number;
  oldestAgeSeconds: number;
  dead: number;
}

/** One organization's figures (ages in seconds, 0 when nothing waits). */
export interface Backlog {
  organization: string;
  /** Rows not done by status (failed: the dead letters); the age of the oldest pending or enqueued. */
  outbox: { pending: number; enqueued: number; held: number; failed: number; oldestAgeSeconds: number };
  needsData: { count: number; oldestAgeSeconds: number };
  /** Pending invoices whose Fecha leaves the PACs' window within the margin (or has left it). */
  late: number;
  corrections: { proving: number; oldestAgeSeconds: number };
  /** Refunds reversed at the provider whose Egreso still stands. */
  reversedRefundsStanding: number;
  email: ChannelBacklog;
  webhook: ChannelBacklog;
  /** Webhook endpoints disabled after a failure streak (an operator's own disabling not counted). */
  endpointsDisabled: number;
}

function backlogOfRow(r: z.infer<typeof backlogRow>): Backlog {
  return {
    organization: r.organization,
    outbox: {
      pending: r.outbox_pending,
      enqueued: r.outbox_enqueued,
      held: r.outbox_held,
      failed: r.outbox_failed,
      oldestAgeSeconds: r.outbox_oldest_age,
    },
    needsData: { count: r.needs_data, oldestAgeSeconds: r.needs_data_oldest_age },
    late: r.late,
    corrections: { proving: r.corrections_proving, oldestAgeSeconds: r.corrections_oldest_age },
    reversedRefundsStanding: r.reversed_refunds_standing,
    email: { pending: r.email_pending, oldestAgeSeconds: r.email_oldest_age, dead: r.email_dead },
    webhook: { pending: r.webhook_pending, oldestAgeSeconds: r.webhook_oldest_age, dead: r.webhook_dead },
    endpointsDisabled: r.endpoints_disabled,
  };
}

/**
 * The session's own organization's figures (row-level security holds the statement to its rows);
 * undefined for a session that names no organization. Late is judged against `now`, the
 * application's clock (Fecha is written with it).
 */
export async function backlogOf(db: RawDb, late: LateRule, now = new Date()): Promise<Backlog | undefined> {
  const [row] = await queryRows(
    db,
    backlogRow,
    Prisma.sql`SELECT * FROM timbra_backlog(${late.windowMs}::float8, ${late.marginMs}::float8, ${now}::timestamptz, NULL)`,
  );
  return row ? backlogOfRow(row) : undefined;
}

/**
 * Every organization with something waiting, and `include` (the home organization) even with
 * nothing; for a session that names none.
 */
export async function backlogEverywhere(
  db: RawDb,
  late: LateRule,
  include: string | undefined,
  now = new Date(),
): Promise<Backlog[]> {
  const rows = await queryRows(
    db,
    backlogRow,
    Prisma.sql`SELECT * FROM timbra_backlog_everywhere(${late.windowMs}::float8, ${late.marginMs}::float8,
                                                       ${now}::timestamptz, ${include ?? null}::uuid)`,
  );
  return rows.map(backlogOfRow);
}
