import { SAT_RULES, type ValidationIssue } from '@timbra/cfdi-core';
import type {
  CancelRequest,
  Installment,
  Invoice,
  InvoiceCorrection,
  InvoiceVersion,
  OutboxRedrive,
  OutboxRow,
  PacAttempt,
  Payment,
  Ticket,
  Refund,
} from '@timbra/db';

const SPANISH = new Map(SAT_RULES.map((r) => [r.code, r.es]));

/**
 * Why a CFDI cannot be issued, as the API shows it: the SAT rule broken (`rule`, its Spanish text in
 * `messageEs`) with the XPath of the node, or a field of the request.
 */
export function problemView(issue: ValidationIssue) {
  const es = issue.rule ? SPANISH.get(issue.rule) : undefined;
  return {
    ...(issue.rule ? { rule: issue.rule } : {}),
    path: issue.path,
    message: issue.message,
    ...(es ? { messageEs: es } : {}),
  };
}

/** JSON shapes the API answers with. Money as decimal strings, never numbers. */
export function invoiceSummary(
  i: Pick<Invoice, 'id' | 'kind' | 'serie' | 'folio' | 'status' | 'uuid' | 'problems' | 'total'>,
) {
  return {
    id: i.id,
    kind: i.kind,
    serie: i.serie,
    folio: i.folio,
    serieFolio: `${i.serie}-${i.folio}`,
    status: i.status,
    uuid: i.uuid,
    total: i.total.toFixed(2),
    ...(Array.isArray(i.problems) ? { problems: (i.problems as unknown as ValidationIssue[]).map(problemView) } : {}),
  };
}

export function paymentView(p: Payment & { ticket?: Ticket | null }, invoices: Parameters<typeof invoiceSummary>[0][]) {
  return {
    id: p.id,
    provider: p.provider,
    externalId: p.externalId,
    amount: p.amount.toFixed(2),
    currency: p.currency,
    occurredAt: p.occurredAt.toISOString(),
    receptor: p.receptor,
    description: p.description,
    /** The lines as resolved when recorded (products' keys, taxes as c_TasaOCuota rates); null: one default concepto. */
    lines: p.lines ?? null,
    customerId: p.customerId,
    email: p.email,
    tipoCambio: p.tipoCambio ? { rate: p.tipoCambio.toFixed(), source: p.tipoCambioSource } : null,
    metadata: p.metadata,
    createdAt: p.createdAt.toISOString(),
    invoices: invoices.map(invoiceSummary),
    /** Global mode: the sale's ticket (its code for the customer, and where it stands). */
    ...(p.ticket
      ? {
          ticket: {
            id: p.ticket.id,
            code: p.ticket.code,
            status: p.ticket.status,
            period: p.ticket.periodStartsOn.toISOString().slice(0, 10),
            invoiceId: p.ticket.invoiceId,
            globalId: p.ticket.globalPeriodId,
          },
        }
      : {}),
  };
}

/** A refund and its Egreso; `waitingFor` while the Egreso waits for its Ingreso to be stamped. */
export function refundView(
  r: Refund,
  /** Null for a ticket refunded before its period's global (nothing was invoiced yet). */
  egreso: Parameters<typeof invoiceSummary>[0] | null,
  waitingFor?: { invoiceId: string; status: string; blocked: boolean },
) {
  return {
    id: r.id,
    paymentId: r.paymentId,
    provider: r.provider,
    externalId: r.externalId,
    amount: r.amount.toFixed(2),
    lines: r.lines ?? null,
    occurredAt: r.occurredAt.toISOString(),
    createdAt: r.createdAt.toISOString(),
    egreso: egreso ? { ...invoiceSummary(egreso), ...(waitingFor ? { waitingFor } : {}) } : null,
  };
}

/**
 * An installment of a PPD Ingreso and its Pago: its number, and the balance before and after it
 * (what the Pago's DoctoRelacionado says).
 */
export function installmentView(
  i: Installment,
  saldos: { saldoAnterior: string; saldoInsoluto: string },
  pago: Parameters<typeof invoiceSummary>[0],
  waitingFor?: { invoiceId: string; status: string; blocked: boolean },
) {
  return {
    id: i.id,
    invoiceId: i.invoiceId,
    provider: i.provider,
    externalId: i.externalId,
    amount: i.amount.toFixed(2),
    paidAt: i.paidAt.toISOString(),
    formaPago: i.formaPago,
    numParcialidad: i.numParcialidad,
    ...saldos,
    createdAt: i.createdAt.toISOString(),
    pago: { ...invoiceSummary(pago), ...(waitingFor ? { waitingFor } : {}) },
  };
}

/** A cancellation request and where it stands (requested, accepted, cancelled, rejected, failed). */
export function cancelRequestView(c: CancelRequest) {
  return {
    id: c.id,
    invoiceId: c.invoiceId,
    motivo: c.motivo,
    folioSustitucion: c.folioSustitucion,
    status: c.status,
    pac: c.pac,
    uuidCode: c.uuidCode,
    estatusCancelacion: c.estatusCancelacion,
    reason: c.reason,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export function invoiceView(
  i: Invoice & {
    outbox: OutboxRow[];
    attempts: PacAttempt[];
    cancelRequests?: CancelRequest[];
    replacedBy?: { id: string } | null;
    corrections?: InvoiceCorrection[];
    redrives?: OutboxRedrive[];
  },
) {
  return {
    ...invoiceSummary(i),
    paymentId: i.paymentId,
    fecha: i.fecha,
    moneda: i.moneda,
    subTotal: i.subTotal.toFixed(2),
    stampKey: i.stampKey,
    version: i.version,
    replacesInvoiceId: i.replacesInvoiceId,
    replacedByInvoiceId: i.replacedBy?.id ?? null,
    pac: i.pac,
    stampedAt: i.stampedAt?.toISOString() ?? null,
    relatedInvoiceId: i.relatedInvoiceId,
    metadata: i.metadata,
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
    cancellations: (i.cancelRequests ?? []).map(cancelRequestView),
    history: {
      outbox: i.outbox.map((o) => ({
        // What POST /v1/outbox/:id/retry takes (a dead-lettered row).
        id: o.id,
        kind: o.kind,
        status: o.status,
        attempts: o.attempts,
        lastError: o.lastError,
        createdAt: o.createdAt.toISOString(),
        updatedAt: o.updatedAt.toISOString(),
      })),
      corrections: (i.corrections ?? []).map(correctionView),
      // Dead letters put back to pending: who, when, why, and the failure each answered.
      redrives: (i.redrives ?? []).map((r) => ({
        outboxId: r.outboxId,
        by: r.by,
        reason: r.reason,
        lastError: r.lastError,
        at: r.createdAt.toISOString(),
      })),
      pacAttempts: i.attempts.map((a) => ({
        pac: a.pac,
        version: a.version,
        outcome: a.outcome,
        uuid: a.uuid,
        code: a.code,
        durationMs: a.durationMs,
        at: a.createdAt.toISOString(),
      })),
    },
  };
}

/** A correction: `proving` (the PACs are being asked), `applied` (with the version it made) or `refused`. */
export function correctionView(c: InvoiceCorrection) {
  return {
    id: c.id,
    invoiceId: c.invoiceId,
    status: c.status,
    reason: c.reason,
    changes: c.changes,
    requestedBy: c.requestedBy,
    fromVersion: c.fromVersion,
    toVersion: c.toVersion,
    code: c.code,
    detail: c.detail,
    attempts: c.attempts,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

/**
 * The versions of an invoice's frozen document, oldest first: version 1 lives on the invoice until a
 * correction keeps it here. `stamped` marks the one the PAC stamped (at most one ever).
 */
export function versionsView(i: Invoice & { versions: InvoiceVersion[]; corrections: InvoiceCorrection[] }) {
  const versions = i.versions.map((v) => ({
    version: v.version,
    fecha: v.fecha,
    reason: v.reason,
    createdBy: v.createdBy,
    createdAt: v.createdAt.toISOString(),
    supersededAt: v.supersededAt?.toISOString() ?? null,
    proof: v.proof,
  }));
  if (!versions.some((v) => v.version === i.version) && i.frozenXml !== null)
    versions.push({
      version: i.version,
      fecha: i.fecha ?? '',
      reason: 'issued',
      createdBy: 'system',
      createdAt: i.createdAt.toISOString(),
      supersededAt: null,
      proof: null,
    });
  return {
    invoiceId: i.id,
    serieFolio: `${i.serie}-${i.folio}`,
    current: i.frozenXml === null ? null : i.version,
    versions: versions.map((v) => ({
      ...v,
      current: v.version === i.version && i.frozenXml !== null,
      stamped: v.version === i.version && i.uuid !== null,
    })),
    corrections: i.corrections.map(correctionView),
  };
}
