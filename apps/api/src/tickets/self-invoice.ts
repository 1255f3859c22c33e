/**
 * Self-invoicing: the customer turns their ticket into a CFDI of their own (while the ticket is open),
 * or corrects the data the PAC refused.
 */
import { randomBytes } from 'node:crypto';
import { BigNumber } from 'bignumber.js';
import { parseAmount, preflight, stampKeyFor, type ValidationIssue } from '@timbra/cfdi-core';
import type { Tx } from '@timbra/db';
import { invoiceStateOf, insertInvoices, takeFolio } from '@timbra/db/invoices';
import { paymentById, setPaymentReceptor } from '@timbra/db/payments';
import { lockTicket, markTicketSelfInvoiced } from '@timbra/db/tickets';
import {
  buildIngresoRequest,
  storedPaymentFacts,
  ingresoSourceId,
  type PaymentFacts,
  type ReceptorInput,
} from '../payments/build-ingreso.ts';
import { correctInvoice } from '../invoices/correct-invoice.ts';
import { DomainError } from '../domain-errors.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import { normalizeTicketCode, freezeWith } from './record-tickets.ts';

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
  const ticket = await lockTicket(tx, { organizationId: deps.organizationId, code: normalizeTicketCode(req.code) });
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

  const folio = await takeFolio(tx, deps.organizationId, deps.serieIngreso);
  const built = buildIngresoRequest(facts, deps.serieIngreso, folio, deps.settings, issuedAt);
  const { frozen, problems: invalid } = freezeWith(deps, built.request);
  if (!frozen) throw new DomainError('validation_failed', undefined, invalid);
  const [invoiceId] = await insertInvoices(tx, deps.organizationId, [
    {
      kind: 'I',
      serie: deps.serieIngreso,
      folio,
      paymentId: payment.id,
      stampKey: stampKeyFor(deps.settings.emisor.rfc, 'I', ingresoSourceId(facts, deps.settings.emisor)),
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
