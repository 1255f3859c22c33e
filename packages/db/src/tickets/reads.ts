/** Tickets and global periods as the API shows them, and the backlog the overdue alert reads. Reads only; the writes are tickets.ts. */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { queryRows, type Db, type RawDb } from '../sql.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';
import type { TicketStatus } from './tickets.ts';

export interface TicketFilter {
  status?: TicketStatus | undefined;
  /** The first day of the ticket's period (YYYY-MM-DD). */
  period?: string | undefined;
}

export function listTickets(db: Db, filter: TicketFilter, page: PageQuery) {
  return db.ticket.findMany({
    where: {
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.period ? { periodStartsOn: new Date(`${filter.period}T00:00:00Z`) } : {}),
      ...afterCursor(page.cursor),
    },
    ...pageWindow(page),
  });
}

export function ticketById(db: Db, id: string) {
  return db.ticket.findUnique({ where: { id } });
}

const INVOICE_REF = { id: true, serie: true, folio: true, status: true, total: true, uuid: true } as const;

/** The issued periods, newest issued first (a period's row is written once, when issued), with their invoices. */
export function listGlobalPeriods(db: Db, page: PageQuery) {
  return db.globalPeriod.findMany({
    where: afterCursor(page.cursor, 'issuedAt'),
    orderBy: [{ issuedAt: 'desc' }, { id: 'desc' }],
    include: { invoices: { select: INVOICE_REF } },
    take: page.limit + 1,
  });
}

/** A global period with its invoices (by folio) and the tickets they hold. */
export function globalPeriodWithTickets(db: Db, id: string) {
  return db.globalPeriod.findUnique({
    where: { id },
    include: {
      invoices: { select: INVOICE_REF, orderBy: { folio: 'asc' } },
      ticketRows: { orderBy: [{ occurredAt: 'asc' }, { code: 'asc' }] },
    },
  });
}

/** An issued period by its key, with its invoices' ids by folio; throws when it has not been issued. */
export function issuedGlobalPeriod(db: Db, key: { organizationId: string; periodicidad: string; startsOn: string }) {
  return db.globalPeriod.findUniqueOrThrow({
    where: {
      organizationId_periodicidad_startsOn: {
        organizationId: key.organizationId,
        periodicidad: key.periodicidad,
        startsOn: new Date(`${key.startsOn}T00:00:00Z`),
      },
    },
    include: { invoices: { select: { id: true }, orderBy: { folio: 'asc' } } },
  });
}

/** Global periods issued (since `since`), newest first, with their invoices. */
export function globalPeriodsIssued(db: Db, since?: Date, limit = 500) {
  return db.globalPeriod.findMany({
    where: since ? { issuedAt: { gte: since } } : {},
    orderBy: [{ issuedAt: 'desc' }, { id: 'desc' }],
    take: limit,
    include: { invoices: { select: INVOICE_REF } },
  });
}

/** Open tickets counted by period, oldest period first: the globals still to issue. */
export function openTicketsByPeriod(db: Db) {
  return db.ticket.groupBy({
    by: ['periodicidad', 'periodStartsOn'],
    where: { status: 'open' },
    _count: { _all: true },
    orderBy: { periodStartsOn: 'asc' },
  });
}

const lateRow = z.object({ oldest_open: z.string().nullable(), unstamped_ends_at: z.date().nullable() });

/**
 * What the overdue alert needs: the first day of the oldest period with open tickets (its end is
 * computed by the caller, who knows the periods), and the end of the oldest issued period whose
 * globals are not all stamped.
 */
export async function globalBacklog(
  db: RawDb,
  organizationId: string,
): Promise<{ oldestOpen: { periodicidad: string; startsOn: string } | null; oldestUnstampedEndsAt: Date | null }> {
  const [row] = await queryRows(
    db,
    lateRow,
    Prisma.sql`SELECT
      (SELECT periodicidad || ' ' || period_starts_on::text FROM tickets WHERE status = 'open' AND organization_id = ${organizationId}::uuid
        ORDER BY period_starts_on LIMIT 1) AS oldest_open,
      (SELECT min(gp.ends_at) FROM global_periods gp JOIN invoices i ON i.global_period_id = gp.id
        WHERE gp.organization_id = ${organizationId}::uuid AND i.status NOT IN ('stamped', 'cancel_requested', 'cancelled')) AS unstamped_ends_at`,
  );
  const [periodicidad, startsOn] = row?.oldest_open?.split(' ') ?? [];
  return {
    oldestOpen: periodicidad && startsOn ? { periodicidad, startsOn } : null,
    oldestUnstampedEndsAt: row?.unstamped_ends_at ?? null,
  };
}
