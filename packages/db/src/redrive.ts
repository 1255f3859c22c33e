import type { PrismaClient } from './generated/client.ts';
import { assertTransition } from './invoice-status.ts';
import { lockOutboxRow, notifyOutbox } from './outbox.ts';

export type RedriveResult =
  { ok: true; outboxId: string; invoiceId: string } | { ok: false; reason: 'not_found' | 'not_failed' };

/**
 * Puts a dead-lettered outbox row back to pending (and its invoice back to pending), in one
 * transaction, and wakes the relay. The invoice keeps its frozen XML: a re-driven document sends
 * exactly the bytes it sent before. Used by the API (`POST /v1/outbox/:id/retry`) and ops tooling.
 */
export async function redriveOutboxRow(prisma: PrismaClient, outboxId: string): Promise<RedriveResult> {
  return prisma.$transaction(async (tx) => {
    const row = await lockOutboxRow(tx, outboxId);
    if (!row) return { ok: false, reason: 'not_found' } as const;
    if (row.status !== 'failed') return { ok: false, reason: 'not_failed' } as const;
    const invoice = await tx.invoice.findUniqueOrThrow({ where: { id: row.invoiceId }, select: { status: true } });
    if (invoice.status !== 'pending') {
      assertTransition(invoice.status, 'pending');
      await tx.invoice.update({ where: { id: row.invoiceId }, data: { status: 'pending' } });
    }
    await tx.outboxRow.update({
      where: { id: row.id },
      data: { status: 'pending', availableAt: new Date(), lastError: null },
    });
    await notifyOutbox(tx, [row.id]);
    return { ok: true, outboxId: row.id, invoiceId: row.invoiceId } as const;
  });
}
