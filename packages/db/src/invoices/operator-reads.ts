/**
 * Invoices as an operator names and reads them (`npm run ops --`): by id, UUID, serie-folio or
 * stamp key; the needs_data queue; what reconciliation against a PAC's ledger starts from.
 */
import { isUuid } from '../light.ts';
import type { Db } from '../sql.ts';

const oldestFirst = { orderBy: { createdAt: 'asc' as const } };

/** Which invoice an operator names: its id or UUID, its serie-folio, or its stamp key. */
export function invoiceNamed(target: string) {
  const serieFolio = /^(.+)-(\d+)$/.exec(target);
  if (isUuid(target)) return { OR: [{ uuid: target.toUpperCase() }, { id: target.toLowerCase() }] };
  return serieFolio ? { serie: serieFolio[1]!, folio: Number(serieFolio[2]) } : { stampKey: target };
}

/** The invoice an operator names, with its outbox rows, PAC attempts and re-drives. */
export function namedInvoiceWithHistory(db: Db, target: string) {
  return db.invoice.findFirst({
    where: invoiceNamed(target),
    include: { outbox: oldestFirst, attempts: oldestFirst, redrives: oldestFirst },
  });
}

/** The invoice an operator names, with its versions and corrections. */
export function namedInvoiceWithVersions(db: Db, target: string) {
  return db.invoice.findFirst({
    where: invoiceNamed(target),
    include: { versions: { orderBy: { version: 'asc' } }, corrections: oldestFirst },
  });
}

/** The id of the invoice an operator names, if there is one. */
export async function namedInvoiceId(db: Db, target: string): Promise<string | undefined> {
  return (await db.invoice.findFirst({ where: invoiceNamed(target), select: { id: true } }))?.id;
}

/** Invoices in needs_data (money arrived, no CFDI yet), oldest first. */
export function invoicesInNeedsData(db: Db, limit = 500) {
  return db.invoice.findMany({
    where: { status: 'needs_data' },
    orderBy: { createdAt: 'asc' },
    take: limit,
    select: { id: true, serie: true, folio: true, kind: true, createdAt: true, problems: true, paymentId: true },
  });
}

/** Every stamped invoice's UUID, and the TFD of the first one stamped (where a ledger's window starts). */
export async function stampedUuids(db: Db) {
  const invoices = await db.invoice.findMany({
    where: { uuid: { not: null } },
    select: { id: true, uuid: true, stampedAt: true },
  });
  const first = invoices.reduce<{ id: string; stampedAt: Date } | undefined>(
    (f, i) => (i.stampedAt && (!f || i.stampedAt < f.stampedAt) ? { id: i.id, stampedAt: i.stampedAt } : f),
    undefined,
  );
  const firstTfd = first
    ? (await db.invoice.findUniqueOrThrow({ where: { id: first.id }, select: { tfdXml: true } })).tfdXml
    : null;
  return { invoices, firstTfd };
}
