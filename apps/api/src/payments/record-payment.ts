import {
  preflight,
  stampKeyFor,
  tryFreeze,
  type Csd,
  type OperatorCatalogs,
  type ValidationIssue,
} from '@timbra/cfdi-core';
import type { RawDb } from '@timbra/db';
import { narrowedTo } from '@timbra/db/organizations';
import { insertInvoices } from '@timbra/db/invoices';
import { insertPaymentsTakingFolios, knownPayments, type NewPayment } from '@timbra/db/payments';
import { assertNotInFuture } from '../domain-errors.ts';
import { buildIngresoRequest, ingresoSourceId, type InvoiceSettings, type PaymentFacts } from './build-ingreso.ts';
import type { ExchangeRateSource } from './exchange-rates.ts';
import { isTicketSale, recordTickets, type GlobalSettings, type RecordedTicket } from '../tickets/record-tickets.ts';

export interface RecordPaymentDeps {
  csd: Csd;
  /**
   * The operator's SAT catalogues (SAT_CLAVE_PROD_SERV_FILE, SAT_CODIGO_POSTAL_FILE), given to every
   * run of the SAT rules; absent: those keys are checked by shape.
   */
  catalogs?: OperatorCatalogs;
  settings: InvoiceSettings;
  serieIngreso: string;
  /** The serie of refunds' Egresos. */
  serieEgreso: string;
  /** The serie of installments' Pagos (complemento de pago). */
  seriePago: string;
  organizationId: string;
  /**
   * Público en general in global mode (PUBLICO_GENERAL_MODE=global): a sale without the customer's
   * data is a ticket, invoiced by its period's factura global. Absent: per-payment mode (its own
   * Ingreso to público en general).
   */
  global?: GlobalSettings;
  /**
   * Reference exchange rates (EXCHANGE_RATE_SOURCE): the TipoCambio of a Pago at its FechaPago and of
   * an Egreso at its refund's day. Undefined: none configured.
   */
  rates?: ExchangeRateSource | undefined;
}

export interface RecordedPayment {
  paymentId: string;
  invoiceId: string | null;
  /** False when the payment was already known (same provider and external id). */
  created: boolean;
  /** Set when this call recorded the invoice as `needs_data`: why it could not be frozen. */
  problems?: readonly { path: string; message: string }[];
  /** Set when the payment is a ticket (global mode): no invoice until self-invoiced or its period's global. */
  ticket?: RecordedTicket;
}

/** A payment to record, and the API client that sent it (REST) if any. */
export interface PaymentToRecord {
  facts: PaymentFacts;
  clientId?: string;
}

/** A payment to record with its organization's dependencies (a batch may hold several organizations'). */
export type PaymentOf = PaymentToRecord & { deps: RecordPaymentDeps };

/**
 * Writes payments, their Ingresos with gapless folios and frozen CFDIs, and the outbox rows, inside
 * the caller's transaction (so webhook events or an idempotency record commit with them). Set-wise,
 * so a batch of payments costs the round trips of one:
 *
 * 1. insert the payments — those already known (same provider + external id, also twice in one
 *    batch) are found instead, and nothing else is written for them — and, in the same statement,
 *    lock the serie's counter row and take one folio per new payment, in the given order (a
 *    rollback gives the numbers back);
 * 2. freeze each CFDI with Fecha = now (the issue time; the payment's own time stays on the
 *    payment); invalid fiscal data leaves that invoice in `needs_data` with the reasons, no outbox row;
 * 3. insert the invoices and the outbox rows, and NOTIFY the relay (delivered at commit).
 *
 * @returns one result per payment, in order.
 */
export function recordPayments(
  tx: RawDb,
  deps: RecordPaymentDeps,
  payments: readonly PaymentToRecord[],
): Promise<RecordedPayment[]> {
  const withDeps = payments.map((p) => ({ ...p, deps }));
  return recordPaymentsOf(tx, withDeps);
}

/**
 * `recordPayments` for payments each with its organization's dependencies (CSD, emisor, series).
 * `several`: the transaction's session names more than one (`OrganizationClients.across()`): every
 * row is written in its payment's organization — the set-wise statements name it per row, global
 * mode's tickets are recorded per organization in the transaction narrowed to it.
 */
export async function recordPaymentsOf(
  tx: RawDb,
  payments: readonly PaymentOf[],
  several = false,
): Promise<RecordedPayment[]> {
  if (payments.length === 0) return [];
  // Fecha of every Ingreso in this batch: the time it is frozen, once.
  const issuedAt = new Date();
  for (const { facts } of payments) assertNotInFuture('occurredAt', facts.occurredAt, issuedAt.getTime());
  const results: (RecordedPayment | undefined)[] = payments.map(() => undefined);
  // Global mode: sales to the general public are tickets (no folio, no invoice yet).
  const ticketIndexes = payments.flatMap((p, i) =>
    p.deps.global && isTicketSale(p.facts, p.deps.settings) ? [i] : [],
  );
  for (const organizationId of new Set(ticketIndexes.map((i) => payments[i]!.deps.organizationId))) {
    const indexes = ticketIndexes.filter((i) => payments[i]!.deps.organizationId === organizationId);
    const record = () => recordTicketSales(tx, payments, indexes, results, issuedAt);
    await (several ? narrowedTo(tx, organizationId, record) : record());
  }
  const invoiceIndexes = payments.flatMap((_, i) => (ticketIndexes.includes(i) ? [] : [i]));
  await recordInvoicedSales(tx, payments, invoiceIndexes, results, issuedAt);
  // Payments known before (or twice in this batch): their rows as they are.
  await answerKnownPayments(tx, payments, results);
  return results as RecordedPayment[];
}

/** The ticket sales of one organization in a batch (global mode), recorded: `results` gets each new one's ticket. */
async function recordTicketSales(
  tx: RawDb,
  payments: readonly PaymentOf[],
  indexes: readonly number[],
  results: (RecordedPayment | undefined)[],
  issuedAt: Date,
): Promise<void> {
  const tickets = await recordTickets(
    tx,
    payments[indexes[0]!]!.deps,
    indexes.map((i) => ({ facts: payments[i]!.facts, payment: newPayment(payments[i]!) })),
    issuedAt,
  );
  tickets.forEach((t, n) => {
    if (t) results[indexes[n]!] = { paymentId: t.paymentId, invoiceId: null, created: true, ticket: t };
  });
}

/**
 * The invoiced sales of a batch: the payments inserted taking their folios (set-wise, each of its
 * organization's serie), each Ingreso built and frozen with its organization's dependencies — or
 * `needs_data` with its problems — and inserted with its outbox row, in folio order. `results` gets
 * each new payment's invoice; a payment known before gets nothing here.
 */
async function recordInvoicedSales(
  tx: RawDb,
  payments: readonly PaymentOf[],
  indexes: readonly number[],
  results: (RecordedPayment | undefined)[],
  issuedAt: Date,
): Promise<void> {
  const inserted = (
    await insertPaymentsTakingFolios(
      tx,
      indexes.map((i) => ({
        ...newPayment(payments[i]!),
        organizationId: payments[i]!.deps.organizationId,
        serie: payments[i]!.deps.serieIngreso,
      })),
    )
  ).map((p) => ({ ...p, index: indexes[p.index]! }));

  const invoices = inserted.map(({ id: paymentId, index, folio }) => {
    const { facts, deps } = payments[index]!;
    const built = buildIngresoRequest(facts, deps.serieIngreso, folio, deps.settings, issuedAt);
    const stampKey = stampKeyFor(deps.settings.emisor.rfc, 'I', ingresoSourceId(facts, deps.settings.emisor));
    const unpayable = [...installmentsProblems(facts), ...(built.problems ?? [])];
    const { frozen, problems } =
      unpayable.length > 0 || !built.request
        ? { frozen: undefined, problems: unpayable }
        : tryFreeze(built.request, deps.csd, deps.catalogs);
    return { index, paymentId, facts, deps, folio, stampKey, frozen, problems };
  });
  invoices.sort((a, b) => a.folio - b.folio);

  const ids = await insertInvoices(
    tx,
    null,
    invoices.map((i) => ({
      organizationId: i.deps.organizationId,
      kind: 'I',
      serie: i.deps.serieIngreso,
      folio: i.folio,
      paymentId: i.paymentId,
      stampKey: i.stampKey,
      moneda: i.facts.currency,
      status: i.frozen ? 'pending' : 'needs_data',
      frozen: i.frozen,
      // The frozen document's own totals (its Total is the amount received); unfrozen: the amount.
      totals: i.frozen
        ? { subTotal: i.frozen.subTotal, total: i.frozen.total }
        : { subTotal: i.facts.amount, total: i.facts.amount },
      problems: i.problems,
    })),
  );
  invoices.forEach(
    (i, n) =>
      (results[i.index] = {
        paymentId: i.paymentId,
        invoiceId: ids[n]!,
        created: true,
        ...(i.frozen ? {} : { problems: i.problems ?? [] }),
      }),
  );
}

/** The payments of a batch known before (or twice in it): their rows as they are, in `results`. */
async function answerKnownPayments(
  tx: RawDb,
  payments: readonly PaymentOf[],
  results: (RecordedPayment | undefined)[],
): Promise<void> {
  const known = payments.flatMap((p, index) => (results[index] ? [] : [{ p, index }]));
  if (known.length === 0) return;
  const keyOf = (organizationId: string, provider: string, externalId: string) =>
    `${organizationId.toLowerCase()}\u0000${provider}\u0000${externalId}`;
  const existing = await knownPayments(
    tx,
    known.map(({ p }) => ({
      provider: p.facts.provider,
      externalId: p.facts.externalId,
      organizationId: p.deps.organizationId,
    })),
  );
  const byKey = new Map(existing.map((e) => [keyOf(e.organizationId, e.provider, e.externalId), e]));
  for (const { p, index } of known) {
    const found = byKey.get(keyOf(p.deps.organizationId, p.facts.provider, p.facts.externalId));
    if (!found) throw new Error('a conflicting payment was not found');
    results[index] = {
      paymentId: found.id,
      invoiceId: found.ingresoId ?? found.ticket?.invoiceId ?? null,
      created: false,
      ...(found.ticket
        ? {
            ticket: {
              id: found.ticket.id,
              paymentId: found.id,
              code: found.ticket.code,
              periodStartsOn: found.ticket.periodStartsOn,
            },
          }
        : {}),
    };
  }
}

/** The payment's row as recorded. */
function newPayment({ facts, clientId }: PaymentToRecord): NewPayment {
  return {
    provider: facts.provider,
    externalId: facts.externalId,
    amount: facts.amount,
    currency: facts.currency,
    occurredAt: facts.occurredAt,
    receptor: facts.receptor,
    description: facts.description,
    clientId: clientId ?? null,
    formaPago: facts.formaPago,
    paymentTerms: facts.paymentTerms ?? 'single',
    lines: facts.lines && facts.lines.length > 0 ? facts.lines : null,
    customerId: facts.customerId ?? null,
    tipoCambio: facts.currency !== 'MXN' ? (facts.tipoCambio ?? null) : null,
    email: facts.email ?? null,
    metadata: facts.metadata ?? {},
  };
}

/** A sale in installments is paid with Pagos that name the customer: público en general won't do. */
function installmentsProblems(facts: PaymentFacts): ValidationIssue[] {
  return facts.paymentTerms === 'installments' && !facts.receptor
    ? [{ path: 'receptor', message: 'a sale in installments needs the customer (metadata rfc, …)' }]
    : [];
}

/**
 * What would keep this payment's Ingreso from being frozen if it were recorded now — the SAT rules
 * its document would break (issues with `rule`), the request's and the CSD's problems — without
 * taking a folio. Empty: recording it freezes the Ingreso. REST answers 422 with these; a webhook
 * payment is recorded anyway (the money arrived) and its invoice waits in `needs_data` with them.
 */
export function ingresoProblems(deps: RecordPaymentDeps, facts: PaymentFacts, issuedAt: Date): ValidationIssue[] {
  assertNotInFuture('occurredAt', facts.occurredAt, issuedAt.getTime());
  const unpayable = installmentsProblems(facts);
  if (unpayable.length > 0) return unpayable;
  // The folio does not enter any rule: the next one is not needed to check.
  const built = buildIngresoRequest(facts, deps.serieIngreso, 1, deps.settings, issuedAt);
  return built.request ? preflight(built.request, deps.csd, deps.catalogs) : built.problems;
}

/** `recordPayments` for one payment. */
export async function recordPayment(
  tx: RawDb,
  deps: RecordPaymentDeps,
  facts: PaymentFacts,
  clientId?: string,
): Promise<RecordedPayment> {
  const [recorded] = await recordPayments(tx, deps, [{ facts, ...(clientId ? { clientId } : {}) }]);
  return recorded!;
}
