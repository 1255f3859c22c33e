/**
 * Tickets and the periods of the factura global (público en general in global mode): the one owner
 * of their rows. The exactly-once rules live here:
 *
 * - a period's globals are issued under an exclusive advisory lock on the period's key, and its row
 *   (unique: emisor, periodicidad, first day) is inserted in the transaction that freezes them;
 * - a ticket is recorded into a period under the same lock, shared: a period being issued waits for
 *   the tickets being recorded into it, and a ticket recorded after sees the period's row and goes to
 *   a later period — no ticket is ever left open in an issued period;
 * - a ticket leaves `open` once (a trigger), under its row lock: self-invoicing, the period's close and
 *   refunds of it are serialised by that lock.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, execute, queryRows, type RawDb } from '../sql.ts';

export const TICKET_STATUSES = ['open', 'self_invoiced', 'in_global', 'refunded'] as const;

export type TicketStatus = (typeof TICKET_STATUSES)[number];

export interface PeriodKey {
  organizationId: string;
  periodicidad: string;
  /** First local day, YYYY-MM-DD. */
  startsOn: string;
}

const existsRow = z.object({ exists: col.bool });

const ticketRow = z.object({
  id: col.uuid,
  payment_id: col.uuid,
  code: col.text,
  total: col.text,
  refunded: col.text,
  forma_pago: col.text,
  parts: col.json,
  periodicidad: col.text,
  period_starts_on: col.text,
  status: z.enum(TICKET_STATUSES),
  invoice_id: z.string().nullable(),
  download_token: z.string().nullable(),
});

const openPeriodRow = z.object({
  organization_id: col.uuid,
  periodicidad: col.text,
  period_starts_on: col.text,
  tickets: col.bigint,
});

const insertedTicketRow = z.object({ id: col.uuid, code: col.text });

/** A ticket as the use cases see it (amounts as decimal strings, the day as YYYY-MM-DD). */
export interface TicketState {
  id: string;
  paymentId: string;
  code: string;
  total: string;
  refunded: string;
  formaPago: string;
  parts: unknown;
  periodicidad: string;
  periodStartsOn: string;
  status: TicketStatus;
  invoiceId: string | null;
  downloadToken: string | null;
}

const TICKET_COLUMNS = Prisma.sql`id, payment_id, code, total::text, refunded::text, forma_pago, parts, periodicidad,
  period_starts_on::text, status, invoice_id, download_token`;

function ticketState(r: z.infer<typeof ticketRow>): TicketState {
  return {
    id: r.id,
    paymentId: r.payment_id,
    code: r.code,
    total: r.total,
    refunded: r.refunded,
    formaPago: r.forma_pago,
    parts: r.parts,
    periodicidad: r.periodicidad,
    periodStartsOn: r.period_starts_on,
    status: r.status,
    invoiceId: r.invoice_id,
    downloadToken: r.download_token,
  };
}

function periodLockKey(p: PeriodKey): Prisma.Sql {
  return Prisma.sql`hashtextextended(${`timbra:global:${p.organizationId}:${p.periodicidad}:${p.startsOn}`}, 0)`;
}

/**
 * Takes the period's lock, shared (recording tickets into it) or exclusive (issuing its globals),
 * until commit. @returns whether its globals were issued (its row exists), read after the lock.
 */
export async function lockGlobalPeriod(tx: RawDb, period: PeriodKey, mode: 'shared' | 'exclusive'): Promise<boolean> {
  const lock =
    mode === 'shared'
      ? Prisma.sql`pg_advisory_xact_lock_shared(${periodLockKey(period)})`
      : Prisma.sql`pg_advisory_xact_lock(${periodLockKey(period)})`;
  await execute(tx, Prisma.sql`SELECT ${lock}`);
  // A new statement: its snapshot sees a period committed while we waited for the lock.
  const [row] = await queryRows(
    tx,
    existsRow,
    Prisma.sql`SELECT EXISTS (SELECT 1 FROM global_periods WHERE organization_id = ${period.organizationId}::uuid
      AND periodicidad = ${period.periodicidad} AND starts_on = ${period.startsOn}::date) AS exists`,
  );
  return row!.exists;
}

export interface NewTicket {
  paymentId: string;
  code: string;
  total: string;
  formaPago: string;
  parts: unknown;
  periodicidad: string;
  periodStartsOn: string;
  occurredAt: Date;
}

/** Inserts tickets (their periods' locks held shared by the caller). @returns their ids, in order. */
export async function insertTickets(
  tx: RawDb,
  organizationId: string,
  tickets: readonly NewTicket[],
): Promise<string[]> {
  if (tickets.length === 0) return [];
  const c = <T>(f: (t: NewTicket) => T): T[] => tickets.map(f);
  const rows = await queryRows(
    tx,
    insertedTicketRow,
    Prisma.sql`
      INSERT INTO tickets (organization_id, payment_id, code, total, forma_pago, parts, periodicidad, period_starts_on, occurred_at)
      SELECT ${organizationId}::uuid, payment_id, code, total, forma_pago, parts, periodicidad, period_starts_on, occurred_at
      FROM unnest(${c((t) => t.paymentId)}::uuid[], ${c((t) => t.code)}::text[], ${c((t) => t.total)}::numeric[],
                  ${c((t) => t.formaPago)}::text[], ${c((t) => JSON.stringify(t.parts))}::jsonb[],
                  ${c((t) => t.periodicidad)}::text[], ${c((t) => t.periodStartsOn)}::date[],
                  ${c((t) => t.occurredAt.toISOString())}::timestamptz[])
        AS t(payment_id, code, total, forma_pago, parts, periodicidad, period_starts_on, occurred_at)
      RETURNING id, code`,
  );
  const byCode = new Map(rows.map((r) => [r.code, r.id]));
  return tickets.map((t) => byCode.get(t.code)!);
}

/** The periods that have open tickets (oldest first), with how many. */
export async function periodsWithOpenTickets(
  db: RawDb,
  organizationId: string,
): Promise<{ periodicidad: string; startsOn: string; tickets: number }[]> {
  const rows = await queryRows(
    db,
    openPeriodRow,
    Prisma.sql`SELECT organization_id, periodicidad, period_starts_on::text, count(*) AS tickets FROM tickets
      WHERE status = 'open' AND organization_id = ${organizationId}::uuid
      GROUP BY organization_id, periodicidad, period_starts_on ORDER BY period_starts_on`,
  );
  return rows.map((r) => ({ periodicidad: r.periodicidad, startsOn: r.period_starts_on, tickets: r.tickets }));
}

/** Locks the period's open tickets (FOR UPDATE), in the order their global lists them. */
export async function lockOpenTickets(tx: RawDb, period: PeriodKey): Promise<TicketState[]> {
  const rows = await queryRows(
    tx,
    ticketRow,
    Prisma.sql`SELECT ${TICKET_COLUMNS} FROM tickets
      WHERE organization_id = ${period.organizationId}::uuid AND periodicidad = ${period.periodicidad}
        AND period_starts_on = ${period.startsOn}::date AND status = 'open'
      ORDER BY occurred_at, code FOR UPDATE`,
  );
  // Re-read under the lock: a ticket self-invoiced or refunded meanwhile is no longer open.
  return rows.map(ticketState).filter((t) => t.status === 'open');
}

/** Locks one ticket (FOR UPDATE): by its code, or by its payment. */
export async function lockTicket(
  tx: RawDb,
  where: { organizationId: string; code: string } | { paymentId: string },
): Promise<TicketState | undefined> {
  const condition =
    'code' in where
      ? Prisma.sql`organization_id = ${where.organizationId}::uuid AND code = ${where.code}`
      : Prisma.sql`payment_id = ${where.paymentId}::uuid`;
  const [row] = await queryRows(
    tx,
    ticketRow,
    Prisma.sql`SELECT ${TICKET_COLUMNS} FROM tickets WHERE ${condition} FOR UPDATE`,
  );
  return row ? ticketState(row) : undefined;
}

/** A ticket by its download token (the self-invoicing page's links). */
export async function ticketByDownloadToken(db: RawDb, token: string): Promise<TicketState | undefined> {
  const [row] = await queryRows(
    db,
    ticketRow,
    Prisma.sql`SELECT ${TICKET_COLUMNS} FROM tickets WHERE download_token = ${token}`,
  );
  return row ? ticketState(row) : undefined;
}

export interface NewGlobalPeriod extends PeriodKey {
  id: string;
  endsOn: string;
  startsAt: Date;
  endsAt: Date;
  meses: string;
  year: number;
  tickets: number;
  total: string;
  parts: number;
  issuedBy: string;
}

/**
 * Writes the period's row — once: the unique key refuses a second — and moves its tickets into their
 * globals (`assignments`: ticket → global invoice), in the caller's transaction, which holds the
 * period's lock exclusively and the tickets' rows.
 */
export async function recordGlobalPeriod(
  tx: RawDb,
  period: NewGlobalPeriod,
  assignments: readonly { ticketId: string; invoiceId: string }[],
  invoiceIds: readonly string[],
): Promise<void> {
  await execute(
    tx,
    Prisma.sql`
      INSERT INTO global_periods (id, organization_id, periodicidad, starts_on, ends_on, starts_at, ends_at, meses, year,
                                  status, tickets, total, parts, issued_by)
      VALUES (${period.id}::uuid, ${period.organizationId}::uuid, ${period.periodicidad}, ${period.startsOn}::date,
              ${period.endsOn}::date, ${period.startsAt}, ${period.endsAt}, ${period.meses}, ${period.year},
              ${period.parts > 0 ? 'issued' : 'empty'}, ${period.tickets}, ${period.total}::numeric, ${period.parts},
              ${period.issuedBy})`,
  );
  if (invoiceIds.length > 0)
    await execute(
      tx,
      Prisma.sql`UPDATE invoices SET global_period_id = ${period.id}::uuid WHERE id = ANY(${[...invoiceIds]}::uuid[])`,
    );
  if (assignments.length > 0)
    await execute(
      tx,
      Prisma.sql`
        UPDATE tickets SET status = 'in_global', invoice_id = a.invoice_id, global_period_id = ${period.id}::uuid
        FROM unnest(${assignments.map((a) => a.ticketId)}::uuid[], ${assignments.map((a) => a.invoiceId)}::uuid[])
          AS a(ticket_id, invoice_id)
        WHERE tickets.id = a.ticket_id AND tickets.status = 'open'`,
    );
}

/** Moves a locked open ticket to `self_invoiced` with its Ingreso and the page's download token. */
export async function markTicketSelfInvoiced(
  tx: RawDb,
  ticketId: string,
  invoiceId: string,
  downloadToken: string,
): Promise<void> {
  const n = await execute(
    tx,
    Prisma.sql`UPDATE tickets SET status = 'self_invoiced', invoice_id = ${invoiceId}::uuid, download_token = ${downloadToken}
      WHERE id = ${ticketId}::uuid AND status = 'open'`,
  );
  if (n !== 1) throw new Error(`ticket ${ticketId} is not open`);
}

/**
 * Records a refund of a locked open ticket before its global: the global will carry less; refunded in
 * full, the ticket is `refunded` and no document will carry it.
 */
export async function refundOpenTicket(tx: RawDb, ticketId: string, amount: string): Promise<TicketStatus> {
  const [row] = await queryRows(
    tx,
    z.object({ status: z.enum(TICKET_STATUSES) }),
    Prisma.sql`UPDATE tickets SET refunded = refunded + ${amount}::numeric,
        status = CASE WHEN refunded + ${amount}::numeric >= total THEN 'refunded' ELSE status END
      WHERE id = ${ticketId}::uuid AND status = 'open' RETURNING status`,
  );
  if (!row) throw new Error(`ticket ${ticketId} is not open`);
  return row.status;
}
