/**
 * Público en general in global mode: a sale recorded as a ticket (its payment, its code for the
 * customer), and what the other ticket use cases share. The rows and their locks are
 * @timbra/db/tickets; the documents are cfdi-core's (global/); @timbra/globals issues a period's
 * factura global, self-invoice.ts lets the customer ask for their own CFDI.
 */
import { randomBytes } from 'node:crypto';
import {
  conceptosForSale,
  globalPeriodOf,
  nextGlobalPeriod,
  ticketParts,
  timeZoneForCodigoPostal,
  tryFreeze,
  type Periodicidad,
} from '@timbra/cfdi-core';
import type { RawDb } from '@timbra/db';
import type { GlobalIssuer } from '@timbra/globals';
import { insertPaymentsWithoutFolios, type NewPayment } from '@timbra/db/payments';
import { insertTickets, lockGlobalPeriod } from '@timbra/db/tickets';
import { linesOf, type InvoiceSettings, type PaymentFacts } from '../payments/build-ingreso.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';

export interface GlobalSettings {
  /** Conceptos per factura global (≤ 1000, the schema's limit): a period with more is split in parts (GLOBAL_MAX_CONCEPTOS). */
  maxConceptosPerGlobal: number;
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
export function zoneOf(settings: InvoiceSettings): string {
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
    while (
      await lockGlobalPeriod(
        tx,
        { organizationId: deps.organizationId, periodicidad, startsOn: period.startsOn },
        'shared',
      )
    ) {
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
  const ids = await insertTickets(tx, deps.organizationId, rows);
  const result: (RecordedTicket | undefined)[] = sales.map(() => undefined);
  rows.forEach((r, n) => {
    result[r.index] = { id: ids[n]!, paymentId: r.paymentId, code: r.code, periodStartsOn: r.periodStartsOn };
  });
  return result;
}

/** What issuing a global needs of the API's settings (@timbra/globals; the worker's close timer builds its own). */
export function globalIssuer(deps: RecordPaymentDeps & { global: GlobalSettings }): GlobalIssuer {
  return {
    organizationId: deps.organizationId,
    emisor: deps.settings.emisor,
    serieIngreso: deps.serieIngreso,
    maxConceptosPerGlobal: deps.global.maxConceptosPerGlobal,
    csd: deps.csd,
    catalogs: deps.catalogs,
  };
}

/** A document frozen with the emisor's CSD and catalogues: the frozen bytes, or the problems. */
export const freezeWith = (deps: RecordPaymentDeps, request: unknown) => tryFreeze(request, deps.csd, deps.catalogs);
