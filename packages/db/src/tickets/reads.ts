/** Tickets and global periods as the API shows them. Reads only; the writes are tickets.ts. */
import type { Db } from '../sql.ts';
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
export function issuedGlobalPeriod(db: Db, key: { emisorId: string; periodicidad: string; startsOn: string }) {
  return db.globalPeriod.findUniqueOrThrow({
    where: {
      emisorId_periodicidad_startsOn: {
        emisorId: key.emisorId,
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
