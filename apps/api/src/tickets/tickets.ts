/**
 * Público en general in global mode: tickets, the factura global of each period, and self-invoicing.
 * The rows and their locks are packages/db's (tickets.ts); the documents are cfdi-core's
 * (global/global-invoice.ts); this is the use case that puts them in one transaction.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { BigNumber } from 'bignumber.js';
import {
  buildGlobalRequest,
  chunkTickets,
  conceptosForSale,
  globalPeriodByStart,
  globalPeriodOf,
  globalSourceId,
  GLOBAL_DEADLINE_MS,
  nextGlobalPeriod,
  parseAmount,
  preflight,
  stampKeyFor,
  ticketParts,
  timeZoneForCodigoPostal,
  tryFreeze,
  type GlobalPeriod,
  type GlobalTicket,
  type Periodicidad,
  type TicketPart,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import type { PrismaClient, RawDb, Tx } from '@timbra/db';
import { invoiceStateOf, insertInvoices, takeFolio } from '@timbra/db/invoices';
import { insertPaymentsWithoutFolios, paymentById, setPaymentReceptor, type NewPayment } from '@timbra/db/payments';
import {
  globalBacklog,
  issuedGlobalPeriod,
  insertTickets,
  lockGlobalPeriod,
  lockOpenTickets,
  lockTicket,
  markTicketSelfInvoiced,
  periodsWithOpenTickets,
  recordGlobalPeriod,
  type TicketState,
} from '@timbra/db/tickets';
import {
  buildIngresoRequest,
  ingresoSourceId,
  linesOf,
  storedPaymentFacts,
  type InvoiceSettings,
  type PaymentFacts,
  type ReceptorInput,
} from '../payments/build-ingreso.ts';
import { correctInvoice } from '../invoices/correct-invoice.ts';
import { DomainError } from '../domain-errors.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';

export interface GlobalSettings {
  /** Conceptos per factura global (≤ 1000, the schema's limit): a period with more is split in parts (GLOBAL_MAX_CONCEPTOS). */
  maxConceptosPerGlobal: number;
  /** How long after a period ends its global is issued: late webhooks of its sales still join it (GLOBAL_CLOSE_DELAY_MINUTES). */
  closeDelayMs: number;
}

export interface RecordedTicket {
  id: string;
  paymentId: string;
  /** Printed for the customer; with the total, what the self-invoicing page asks for. */
  code: string;
  /** The period whose global will carry it (unless self-invoiced first): its first local day. */
  periodStartsOn: string;
}

/** Whether a sale is a ticket in global mode: no customer data, pesos, paid at once, lines that add up. */
export function isTicketSale(facts: PaymentFacts, settings: InvoiceSettings): boolean {
  if (facts.receptor || facts.currency !== 'MXN' || facts.paymentTerms === 'installments') return false;
  if (facts.problems && facts.problems.length > 0) return false;
  return conceptosForSale(linesOf(facts, settings), 'MXN', facts.amount).ok;
}

/** The emisor's zone (its LugarExpedicion's): the periods are in local time. */
function zoneOf(settings: InvoiceSettings): string {
  return timeZoneForCodigoPostal(settings.emisor.lugarExpedicion);
}

/** Ticket codes: 10 characters of Crockford's base32 (no I, L, O, U), ~50 random bits. */
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export function newTicketCode(): string {
  const bytes = randomBytes(10);
  return [...bytes].map((b) => CODE_ALPHABET[b & 31]).join('');
}

/** A code as a person types it: case, spaces and dashes ignored; O read as 0, I and L as 1. */
export function normalizeTicketCode(input: string): string {
  return input.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
}

/**
 * Records ticket sales: their payments (no folio taken) and their tickets, each in the period of
 * its time — or, when that period's global was already issued (a late webhook), the first later
 * period still open. Each period's lock is held shared until commit (tickets.ts).
 * @returns per sale its ticket, or undefined when the payment was known before.
 */
export async function recordTickets(
  tx: RawDb,
  deps: RecordPaymentDeps,
  sales: readonly { facts: PaymentFacts; payment: NewPayment }[],
  now: Date,
): Promise<(RecordedTicket | undefined)[]> {
  const inserted = await insertPaymentsWithoutFolios(
    tx,
    sales.map((s) => s.payment),
  );
  const zone = zoneOf(deps.settings);
  const periodicidad = deps.settings.periodicidad as Periodicidad;
  const periods = new Map<string, string>(); // starts_on of the sale's period -> the period it goes in
  const periodFor = async (facts: PaymentFacts): Promise<string> => {
    let period = globalPeriodOf(facts.occurredAt, periodicidad, zone);
    const first = period.startsOn;
    const known = periods.get(first);
    if (known) return known;
    while (await lockGlobalPeriod(tx, { emisorId: deps.emisorId, periodicidad, startsOn: period.startsOn }, 'shared')) {
      // Issued already: the sale joins a later period (never one that ends before now: it would be closed).
      const later = nextGlobalPeriod(period, zone);
      period = later.endsAt < now ? globalPeriodOf(now, periodicidad, zone) : later;
    }
    periods.set(first, period.startsOn);
    return period.startsOn;
  };
  const rows = [];
  for (const { id: paymentId, index } of inserted) {
    const facts = sales[index]!.facts;
    const lines = linesOf(facts, deps.settings);
    const plan = conceptosForSale(lines, 'MXN', facts.amount);
    if (!plan.ok) throw new Error('a ticket sale whose lines do not add up'); // isTicketSale checked it
    rows.push({
      index,
      paymentId,
      code: newTicketCode(),
      total: facts.amount,
      formaPago: facts.formaPago,
      parts: ticketParts(lines, plan.grosses),
      periodicidad,
      periodStartsOn: await periodFor(facts),
      occurredAt: facts.occurredAt,
    });
  }
  const ids = await insertTickets(tx, deps.emisorId, rows);
  const result: (RecordedTicket | undefined)[] = sales.map(() => undefined);
  rows.forEach((r, n) => {
    result[r.index] = { id: ids[n]!, paymentId: r.paymentId, code: r.code, periodStartsOn: r.periodStartsOn };
  });
  return result;
}

export interface IssuedGlobal {
  periodId: string;
  periodicidad: string;
  startsOn: string;
  endsOn: string;
  /** False when the period's globals were issued before (by another instance, or an earlier call). */
  created: boolean;
  invoiceIds: string[];
  tickets: number;
  total: string;
}

/**
 * Issues the factura global of one period, exactly once: under the period's exclusive lock, its row
 * (unique key) is written with its globals — one per `maxConceptosPerGlobal` conceptos, each with a folio
 * of the Ingreso serie, frozen, with its outbox row — and its open tickets move into them, all in one
 * transaction. A period with no open ticket is recorded `empty`. Issuing an issued period returns it.
 *
 * @throws DomainError not_found when `startsOn` does not start a period of the emisor's periodicidad
 */
export async function issueGlobal(
  prisma: PrismaClient,
  deps: RecordPaymentDeps & { global: GlobalSettings },
  startsOn: string,
  issuedBy: string,
): Promise<IssuedGlobal> {
  const zone = zoneOf(deps.settings);
  const periodicidad = deps.settings.periodicidad as Periodicidad;
  const period = globalPeriodByStart(startsOn, periodicidad, zone);
  if (!period)
    throw new DomainError('validation_failed', undefined, [
      { path: 'startsOn', message: `${startsOn} does not start a period of Periodicidad ${periodicidad}` },
    ]);
  return prisma.$transaction(
    async (tx) => {
      const key = { emisorId: deps.emisorId, periodicidad, startsOn };
      if (await lockGlobalPeriod(tx, key, 'exclusive')) return issuedPeriod(tx, key);
      const tickets = await lockOpenTickets(tx, key);
      const issuedAt = new Date();
      const chunks = chunkTickets(
        tickets.map((t) => ({ row: t, ...globalTicket(t) })),
        deps.global.maxConceptosPerGlobal,
      );
      const periodId = randomUUID();
      const invoices = [];
      const assignments: { ticketId: string; invoiceId: string }[] = [];
      for (const [n, chunk] of chunks.entries()) {
        const folio = await takeFolio(tx, deps.emisorId, deps.serieIngreso);
        const built = buildGlobalRequest({
          emisor: deps.settings.emisor,
          book: deps.emisorId,
          period,
          part: n + 1,
          tickets: chunk,
          serie: deps.serieIngreso,
          folio,
          issuedAt,
        });
        const { frozen, problems } = built.request ? freezeWith(deps, built.request) : { problems: built.problems };
        const total = chunk.reduce((sum, t) => sum.plus(t.total).minus(t.refunded), new BigNumber(0)).toFixed(2);
        invoices.push({ chunk, folio, frozen, problems, request: built.request, total });
      }
      const ids = await insertInvoices(
        tx,
        deps.emisorId,
        invoices.map((i, n) => ({
          kind: 'I' as const,
          serie: deps.serieIngreso,
          folio: i.folio,
          paymentId: null,
          stampKey: stampKeyFor(deps.settings.emisor.rfc, 'I', globalSourceId(deps.emisorId, period, n + 1)),
          moneda: 'MXN',
          status: i.frozen ? ('pending' as const) : ('needs_data' as const),
          frozen: i.frozen,
          totals: i.frozen
            ? { subTotal: i.frozen.subTotal, total: i.frozen.total }
            : { subTotal: i.total, total: i.total },
          problems: i.problems,
          // Kept: a global in needs_data is corrected (re-frozen) from it.
          request: i.request,
        })),
      );
      invoices.forEach((i, n) => i.chunk.forEach((t) => assignments.push({ ticketId: t.row.id, invoiceId: ids[n]! })));
      const total = invoices.reduce((sum, i) => sum.plus(i.total), new BigNumber(0)).toFixed(2);
      await recordGlobalPeriod(
        tx,
        {
          id: periodId,
          ...key,
          endsOn: period.endsOn,
          startsAt: period.startsAt,
          endsAt: period.endsAt,
          meses: period.meses,
          year: period.año,
          tickets: assignments.length,
          total,
          parts: ids.length,
          issuedBy,
        },
        assignments,
        ids,
      );
      return {
        periodId,
        periodicidad,
        startsOn,
        endsOn: period.endsOn,
        created: true,
        invoiceIds: ids,
        tickets: assignments.length,
        total,
      };
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

async function issuedPeriod(
  tx: Tx,
  key: { emisorId: string; periodicidad: string; startsOn: string },
): Promise<IssuedGlobal> {
  const row = await issuedGlobalPeriod(tx, key);
  return {
    periodId: row.id,
    periodicidad: row.periodicidad,
    startsOn: key.startsOn,
    endsOn: row.endsOn.toISOString().slice(0, 10),
    created: false,
    invoiceIds: row.invoices.map((i) => i.id),
    tickets: row.tickets,
    total: row.total.toFixed(2),
  };
}

/** A ticket row as cfdi-core's global builder takes it. */
function globalTicket(t: TicketState): GlobalTicket {
  return { code: t.code, total: t.total, refunded: t.refunded, parts: t.parts as TicketPart[], formaPago: t.formaPago };
}

/**
 * The periods whose globals are due: they have open tickets and ended `closeDelayMs` ago or more.
 * Oldest first.
 */
export async function duePeriods(
  prisma: PrismaClient,
  deps: RecordPaymentDeps & { global: GlobalSettings },
  now: Date,
): Promise<GlobalPeriod[]> {
  const zone = zoneOf(deps.settings);
  const open = await periodsWithOpenTickets(prisma, deps.emisorId);
  return open
    .map((p) => globalPeriodByStart(p.startsOn, p.periodicidad as Periodicidad, zone))
    .filter(
      (p): p is GlobalPeriod => p !== undefined && p.endsAt.getTime() + deps.global.closeDelayMs <= now.getTime(),
    );
}

/** Freezes with the process's CSD and the operator's catalogues (both in `deps`). */
const freezeWith = (deps: RecordPaymentDeps, request: unknown) => tryFreeze(request, deps.csd, deps.catalogs);

/** Issues every due period's global (the API's close timer; several instances may run it: exactly once). */
export async function issueDueGlobals(
  prisma: PrismaClient,
  deps: RecordPaymentDeps & { global: GlobalSettings },
  now = new Date(),
): Promise<IssuedGlobal[]> {
  const issued = [];
  for (const period of await duePeriods(prisma, deps, now))
    issued.push(await issueGlobal(prisma, deps, period.startsOn, 'schedule'));
  return issued;
}

/**
 * Where the globals stand, for the overdue alert: seconds since the end of the oldest period whose
 * tickets are not all in a stamped global (0: none), against the SAT's 72 hours.
 */
export async function globalLag(
  prisma: PrismaClient,
  deps: RecordPaymentDeps,
  now = new Date(),
): Promise<{ oldestUnstampedSeconds: number; deadlineSeconds: number }> {
  const backlog = await globalBacklog(prisma, deps.emisorId);
  const zone = zoneOf(deps.settings);
  const ends: number[] = [];
  if (backlog.oldestOpen) {
    const p = globalPeriodByStart(backlog.oldestOpen.startsOn, backlog.oldestOpen.periodicidad as Periodicidad, zone);
    if (p) ends.push(p.endsAt.getTime());
  }
  if (backlog.oldestUnstampedEndsAt) ends.push(backlog.oldestUnstampedEndsAt.getTime());
  const oldest = ends.length > 0 ? Math.min(...ends) : now.getTime();
  return {
    oldestUnstampedSeconds: Math.max(0, (now.getTime() - oldest) / 1000),
    deadlineSeconds: GLOBAL_DEADLINE_MS / 1000,
  };
}

/** What the customer gives on the self-invoicing page. */
export interface SelfInvoiceRequest {
  code: string;
  /** The ticket's total as printed, a decimal string. */
  total: string;
  receptor: ReceptorInput;
  email?: string | null;
}

export interface SelfInvoiced {
  ticketId: string;
  invoiceId: string;
  downloadToken: string;
  /** False when this ticket was self-invoiced before with the same RFC (a double submit): the same invoice. */
  created: boolean;
  /** The customer corrected the data of a self-invoice the PAC refused (or that needed data): a new version. */
  corrected?: boolean;
}

/** A self-invoice the customer may correct on the page: no CFDI was stamped, and it waits for better data. */
const CUSTOMER_CORRECTABLE = new Set(['stamp_failed', 'needs_data']);

/** Whether two receptors are the same data (what a double submit sends). */
function sameReceptor(a: ReceptorInput | null, b: ReceptorInput): boolean {
  return (
    a !== null &&
    a.rfc === b.rfc &&
    a.nombre === b.nombre &&
    a.codigoPostal === b.codigoPostal &&
    a.regimenFiscal === b.regimenFiscal &&
    a.usoCfdi === b.usoCfdi
  );
}

/**
 * Self-invoicing: the customer's own Ingreso for a ticket, instead of its period's global. Under the
 * ticket's row lock (the period's close takes the same lock): allowed only while the ticket is open;
 * once, and idempotent for the same RFC. The ticket's payment takes the customer's data (its refunds'
 * Egresos name the customer) and email.
 *
 * @throws DomainError ticket_not_found (code and total do not match a ticket: one answer for both),
 *   ticket_in_global, ticket_refunded, ticket_already_invoiced, validation_failed (the customer's data
 *   breaks a SAT rule: nothing is written)
 */
export async function selfInvoice(tx: Tx, deps: RecordPaymentDeps, req: SelfInvoiceRequest): Promise<SelfInvoiced> {
  const ticket = await lockTicket(tx, { emisorId: deps.emisorId, code: normalizeTicketCode(req.code) });
  if (!ticket || !sameAmount(ticket.total, req.total)) throw new DomainError('ticket_not_found');
  const payment = await paymentById(tx, ticket.paymentId);
  if (ticket.status === 'self_invoiced') {
    if (!ticket.invoiceId || !ticket.downloadToken) throw new DomainError('ticket_already_invoiced');
    const done = {
      ticketId: ticket.id,
      invoiceId: ticket.invoiceId,
      downloadToken: ticket.downloadToken,
      created: false,
    };
    const receptor = payment.receptor as ReceptorInput | null;
    if (sameReceptor(receptor, req.receptor)) return done;
    // The PAC refused the customer's data (or it was incomplete): nothing was stamped, so the customer
    // corrects it here, as an operator would with PATCH (a new version; proved unstamped if a PAC saw it).
    const invoice = await invoiceStateOf(tx, ticket.invoiceId);
    if (invoice && CUSTOMER_CORRECTABLE.has(invoice.status)) {
      const result = await correctInvoice(
        tx,
        { payments: deps, defaultFormaPago: ticket.formaPago, lateMarginMs: 0 },
        ticket.invoiceId,
        { receptor: req.receptor, reason: 'corrected by the customer on the self-invoicing page' },
        'self-invoicing page',
      );
      if (result.kind === 'rejected') throw new DomainError('validation_failed', undefined, result.problems);
      return { ...done, corrected: true };
    }
    if (receptor?.rfc === req.receptor.rfc) return done;
    throw new DomainError('ticket_already_invoiced');
  }
  if (ticket.status === 'in_global') throw new DomainError('ticket_in_global');
  if (ticket.status === 'refunded' || !new BigNumber(ticket.refunded).isZero())
    throw new DomainError('ticket_refunded');

  // The sale as recorded, to the customer (paid at once, in pesos: a ticket's conditions).
  const facts: PaymentFacts = { ...storedPaymentFacts(payment, ticket.formaPago), receptor: req.receptor };
  const issuedAt = new Date();
  const probe = buildIngresoRequest(facts, deps.serieIngreso, 1, deps.settings, issuedAt);
  const problems: ValidationIssue[] = probe.request
    ? preflight(probe.request, deps.csd, deps.catalogs)
    : probe.problems;
  if (problems.length > 0) throw new DomainError('validation_failed', undefined, problems);

  const folio = await takeFolio(tx, deps.emisorId, deps.serieIngreso);
  const built = buildIngresoRequest(facts, deps.serieIngreso, folio, deps.settings, issuedAt);
  const { frozen, problems: invalid } = freezeWith(deps, built.request);
  if (!frozen) throw new DomainError('validation_failed', undefined, invalid);
  const [invoiceId] = await insertInvoices(tx, deps.emisorId, [
    {
      kind: 'I',
      serie: deps.serieIngreso,
      folio,
      paymentId: payment.id,
      stampKey: stampKeyFor(deps.settings.emisor.rfc, 'I', ingresoSourceId(facts)),
      moneda: 'MXN',
      status: 'pending',
      frozen,
      totals: { subTotal: frozen.subTotal, total: frozen.total },
    },
  ]);
  await setPaymentReceptor(tx, payment.id, { ...req.receptor }, payment.email ? undefined : (req.email ?? undefined));
  const downloadToken = randomBytes(24).toString('base64url');
  await markTicketSelfInvoiced(tx, ticket.id, invoiceId!, downloadToken);
  return { ticketId: ticket.id, invoiceId: invoiceId!, downloadToken, created: true };
}

/** Whether the total typed (e.g. "1,160.5", "$1160.50") is the ticket's: the money grammar (parseAmount) once `$`, spaces and thousands separators are gone. */
function sameAmount(stored: string, typed: string): boolean {
  const parsed = parseAmount(typed.replace(/[$\s,]/g, ''), 'MXN');
  return parsed.ok && new BigNumber(parsed.amount).isEqualTo(stored);
}
