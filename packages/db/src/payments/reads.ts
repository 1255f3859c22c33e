/**
 * Payments, refunds and installments as the API shows them: each with the invoices it made. Reads
 * only; the writes are payments.ts and installments.ts.
 */
import type { Db } from '../sql.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';
import { metadataWhere, type Metadata } from '../metadata.ts';

const WITH_INVOICES = { invoices: true, ticket: true } as const;

/** A payment with its invoices and its ticket (global mode), or null. */
export function paymentWithInvoices(db: Db, id: string) {
  return db.payment.findUnique({ where: { id }, include: WITH_INVOICES });
}

export async function paymentExists(db: Db, id: string): Promise<boolean> {
  return (await db.payment.findUnique({ where: { id }, select: { id: true } })) !== null;
}

export interface PaymentFilter {
  externalId?: string | undefined;
  provider?: string | undefined;
  /** An invoice's SAT UUID (folio fiscal), upper case. */
  uuid?: string | undefined;
  /** Every key equal to its value. */
  metadata?: Metadata | undefined;
}

export async function listPayments(db: Db, filter: PaymentFilter, page: PageQuery) {
  return db.payment.findMany({
    where: {
      ...(await metadataWhere(db, 'payments', filter.metadata)),
      ...(filter.externalId ? { externalId: filter.externalId } : {}),
      ...(filter.provider ? { provider: filter.provider } : {}),
      ...(filter.uuid ? { invoices: { some: { uuid: filter.uuid } } } : {}),
      ...afterCursor(page.cursor),
    },
    ...pageWindow(page),
    include: WITH_INVOICES,
  });
}

/** A refund with its Egreso. */
export function refundWithEgreso(db: Db, id: string) {
  return db.refund.findUniqueOrThrow({ where: { id }, include: { egreso: true } });
}

/**
 * An installment with its Pago and the balances it left: what was owed before it (the Ingreso's
 * total less the earlier installments) and after it.
 */
export async function installmentWithBalance(db: Db, id: string) {
  const installment = await db.installment.findUniqueOrThrow({
    where: { id },
    include: { pago: true, invoice: { select: { total: true } } },
  });
  const before = await db.installment.aggregate({
    where: { invoiceId: installment.invoiceId, numParcialidad: { lt: installment.numParcialidad } },
    _sum: { amount: true },
  });
  const saldoAnterior = installment.invoice.total.minus(before._sum.amount ?? 0);
  return { installment, saldoAnterior, saldoInsoluto: saldoAnterior.minus(installment.amount) };
}

/** A payment by its id; throws when there is none. */
export function paymentById(db: Db, id: string) {
  return db.payment.findUniqueOrThrow({ where: { id } });
}
