/**
 * Invoices as the API and the pages show them: one with its whole history (outbox rows, PAC
 * attempts, cancellations, corrections, redrives), its versions, lists. Reads only.
 */
import type { Db } from '../sql.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';
import { metadataWhere, type Metadata } from '../metadata.ts';
import type { InvoiceStatus } from './invoice-status.ts';

const oldestFirst = { orderBy: { createdAt: 'asc' as const } };

/** An invoice with everything that happened to it, oldest first; null when there is none. */
export function invoiceWithHistory(db: Db, id: string) {
  return db.invoice.findUnique({
    where: { id },
    include: {
      outbox: oldestFirst,
      attempts: oldestFirst,
      cancelRequests: oldestFirst,
      replacedBy: { select: { id: true } },
      corrections: oldestFirst,
      redrives: oldestFirst,
    },
  });
}

export type InvoiceWithHistory = NonNullable<Awaited<ReturnType<typeof invoiceWithHistory>>>;

/** An invoice with every version of its frozen document and the corrections that made them. */
export function invoiceWithVersions(db: Db, id: string) {
  return db.invoice.findUnique({
    where: { id },
    include: { versions: { orderBy: { version: 'asc' } }, corrections: oldestFirst },
  });
}

export async function invoiceExists(db: Db, id: string): Promise<boolean> {
  return (await db.invoice.findUnique({ where: { id }, select: { id: true } })) !== null;
}

export function correctionById(db: Db, id: string) {
  return db.invoiceCorrection.findUniqueOrThrow({ where: { id } });
}

export function cancelRequestById(db: Db, id: string) {
  return db.cancelRequest.findUniqueOrThrow({ where: { id } });
}

/** A cancellation request of this invoice, or null (one of another invoice is not found either). */
export function cancelRequestOf(db: Db, invoiceId: string, id: string) {
  return db.cancelRequest.findFirst({ where: { id, invoiceId } });
}

export interface InvoiceFilter {
  status?: InvoiceStatus | undefined;
  /** The payment's external id. */
  externalId?: string | undefined;
  uuid?: string | undefined;
  /** Every key equal to its value. */
  metadata?: Metadata | undefined;
  /** One serie-folio (`A-12`: serie `A`, folio 12). */
  serie?: string | undefined;
  folio?: number | undefined;
  /** The customer: the receptor's RFC its payment recorded (upper case), or the payment's customer. */
  rfc?: string | undefined;
  customerId?: string | undefined;
  /** Created at or after `createdFrom`, and before `createdTo`. */
  createdFrom?: Date | undefined;
  createdTo?: Date | undefined;
}

/** The payment-side conditions of a filter (one `payment` relation filter, or none). */
function paymentWhere(filter: InvoiceFilter) {
  const where = {
    ...(filter.externalId ? { externalId: filter.externalId } : {}),
    ...(filter.rfc ? { receptor: { path: ['rfc'], equals: filter.rfc } } : {}),
    ...(filter.customerId ? { customerId: filter.customerId } : {}),
  };
  return Object.keys(where).length > 0 ? { payment: where } : {};
}

/** Invoices newest first, each with its receptor's RFC and name (its payment's, null for a global). */
export async function listInvoices(db: Db, filter: InvoiceFilter, page: PageQuery) {
  const created = {
    ...(filter.createdFrom ? { gte: filter.createdFrom } : {}),
    ...(filter.createdTo ? { lt: filter.createdTo } : {}),
  };
  return db.invoice.findMany({
    where: {
      AND: [
        await metadataWhere(db, 'invoices', filter.metadata),
        filter.status ? { status: filter.status } : {},
        paymentWhere(filter),
        filter.uuid ? { uuid: filter.uuid } : {},
        filter.serie !== undefined ? { serie: filter.serie } : {},
        filter.folio !== undefined ? { folio: filter.folio } : {},
        Object.keys(created).length > 0 ? { createdAt: created } : {},
        afterCursor(page.cursor),
      ],
    },
    include: { payment: { select: { receptor: true } } },
    ...pageWindow(page),
  });
}

/** An invoice as its customer's page shows it: the payment's email, the stamp's last PAC answer. */
export function invoiceForCustomer(db: Db, id: string) {
  return db.invoice.findUnique({
    where: { id },
    include: {
      payment: { select: { email: true } },
      outbox: { where: { kind: 'stamp' }, select: { lastError: true } },
    },
  });
}

/** Where an invoice's document stands: its UUID once stamped, its version and frozen bytes. */
export function invoiceVersionState(db: Db, id: string) {
  return db.invoice.findUniqueOrThrow({
    where: { id },
    select: { uuid: true, version: true, frozenXml: true, stampKey: true, status: true },
  });
}

/**
 * A stamped document as the customer's copy is made from it (null fields until it is stamped): its
 * stamped XML is cfdi-core's `stampedXmlOf` of these fields.
 */
export function stampedDocumentOf(db: Db, id: string) {
  return db.invoice.findUnique({
    where: { id },
    select: {
      id: true,
      kind: true,
      serie: true,
      folio: true,
      uuid: true,
      frozenXml: true,
      tfdXml: true,
      stampedXml: true,
    },
  });
}
