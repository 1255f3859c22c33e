/**
 * A stamped Ingreso replaced by a new one (TipoRelacion 04): which invoice replaced it, and the
 * writes that record the replacement — the new invoice's link to the original, an `applied`
 * correction on the original saying so, and what the payment learns (the customer's data).
 */
import type { Prisma } from '../generated/client.ts';
import type { Tx, Db } from '../sql.ts';

/** The invoice that replaces `originalId`, when there is one (one at most: a unique index). */
export async function replacementOf(db: Db, originalId: string): Promise<string | undefined> {
  const row = await db.invoice.findUnique({ where: { replacesInvoiceId: originalId }, select: { id: true } });
  return row?.id;
}

export interface Replacement {
  original: { id: string; version: number };
  replacementId: string;
  changes: Prisma.InputJsonObject;
  reason: string;
  requestedBy: string;
  detail: string;
  /** What the payment learns with the replacement. */
  payment?: { id: string; receptor?: Prisma.InputJsonObject | undefined; formaPago?: string | undefined } | undefined;
}

export async function recordReplacement(tx: Tx, r: Replacement): Promise<void> {
  await tx.invoice.update({ where: { id: r.replacementId }, data: { replacesInvoiceId: r.original.id } });
  await tx.invoiceCorrection.create({
    data: {
      invoiceId: r.original.id,
      status: 'applied',
      changes: { ...r.changes, replacedBy: r.replacementId },
      request: { replacement: r.replacementId },
      reason: r.reason,
      requestedBy: r.requestedBy,
      fromVersion: r.original.version,
      code: 'replaced',
      detail: r.detail,
    },
  });
  const payment = r.payment;
  if (payment && (payment.receptor || payment.formaPago))
    await tx.payment.update({
      where: { id: payment.id },
      data: {
        ...(payment.receptor ? { receptor: { ...payment.receptor } } : {}),
        ...(payment.formaPago ? { formaPago: payment.formaPago } : {}),
      },
    });
}
