import type { PrismaClient } from '../generated/client.ts';
import { assertTransition } from '../invoices/invoice-status.ts';
import { lockOutboxRow, notifyOutbox } from './outbox.ts';

/** Who re-drives, for the audit trail: `api:<key name>`, `ops:<user>`, `dashboard:<user>`; and why. */
export interface RedriveBy {
  by: string;
  reason?: string | undefined;
  /**
   * Resend bytes a PAC refused for good (its answer was permanent: a SAT rule, the CSD): they will
   * be refused again unless what the PAC checked changed (a taxpayer registered since, a PAC fixed).
   */
  force?: boolean | undefined;
}

export type RedriveResult =
  | { ok: true; outboxId: string; invoiceId: string }
  | { ok: false; reason: 'not_found' | 'not_failed' }
  | { ok: false; reason: 'permanent_rejection'; invoiceId: string; lastError: string | null };

/**
 * Whether a dead letter is a PAC's permanent refusal of the version it holds (the last call's
 * outcome): resending the same bytes gets the same answer; the document must be corrected instead.
 */
export async function refusedForGood(db: Pick<PrismaClient, 'pacAttempt'>, invoiceId: string): Promise<boolean> {
  const last = await db.pacAttempt.findFirst({
    where: { invoiceId, outcome: { not: 'in_flight' } },
    orderBy: { createdAt: 'desc' },
    select: { outcome: true },
  });
  return last?.outcome === 'permanent';
}

/**
 * Puts a dead-lettered outbox row back to pending (and its invoice back to pending), in one
 * transaction with its audit record (who, when, why, the failure it answers), and wakes the relay. The invoice keeps its frozen XML: a re-driven document sends
 * exactly the bytes it sent before. Used by the API (`POST /v1/outbox/:id/retry`) and ops tooling.
 */
export async function redriveOutboxRow(prisma: PrismaClient, outboxId: string, who: RedriveBy): Promise<RedriveResult> {
  return prisma.$transaction(async (tx) => {
    const row = await lockOutboxRow(tx, outboxId);
    if (!row) return { ok: false, reason: 'not_found' } as const;
    if (row.status !== 'failed') return { ok: false, reason: 'not_failed' } as const;
    const { lastError } = await tx.outboxRow.findUniqueOrThrow({ where: { id: row.id }, select: { lastError: true } });
    if (!who.force && (await refusedForGood(tx, row.invoiceId)))
      return { ok: false, reason: 'permanent_rejection', invoiceId: row.invoiceId, lastError } as const;
    // The audit trail, in the same transaction: a re-drive that happened is always on record.
    await tx.outboxRedrive.create({
      data: { outboxId: row.id, invoiceId: row.invoiceId, by: who.by, reason: who.reason ?? null, lastError },
    });
    const invoice = await tx.invoice.findUniqueOrThrow({ where: { id: row.invoiceId }, select: { status: true } });
    if (invoice.status !== 'pending') {
      assertTransition(invoice.status, 'pending');
      await tx.invoice.update({ where: { id: row.invoiceId }, data: { status: 'pending' } });
    }
    // Available at the database's now: the relay claims with that clock.
    await tx.$executeRaw`UPDATE outbox SET status = 'pending', available_at = now(), last_error = NULL, updated_at = now()
      WHERE id = ${row.id}::uuid`;
    await notifyOutbox(tx, [row.id]);
    return { ok: true, outboxId: row.id, invoiceId: row.invoiceId } as const;
  });
}
