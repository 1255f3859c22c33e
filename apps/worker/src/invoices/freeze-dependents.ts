import {
  tryFreeze,
  withRelatedUuid,
  type Csd,
  type InvoiceRequestInput,
  type OperatorCatalogs,
} from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import {
  invoicesWithOverdueDependents,
  lockWaitingDependents,
  markDependentFrozen,
  markDependentNeedsData,
} from '@timbra/db/invoices';
import { enqueueOutbox } from '@timbra/db/outbox';

/**
 * Freezes, once, the documents waiting for `originalId` to be stamped: each `waiting` invoice gets its
 * frozen XML, becomes `pending` and gets
 * its outbox row, in one transaction; the relay is woken.
 * Fecha is the issue time the API stored in the request when it recorded the document (never now()
 * here: DESIGN.md invariant 4). Idempotent: only `waiting` rows are taken
 * (FOR UPDATE SKIP LOCKED) and the frozen XML can be written only once (a trigger). Invalid data
 * leaves the dependent in `needs_data` with the reasons. Returns how many were frozen.
 */
export async function freezeDependents(
  prisma: PrismaClient,
  csd: Csd,
  originalId: string,
  catalogs: OperatorCatalogs = {},
): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const waiting = await lockWaitingDependents(tx, originalId);
    if (!waiting) return 0;
    const ready: { invoiceId: string; stampKey: string }[] = [];
    for (const dependent of waiting.dependents) {
      const request = dependent.request as InvoiceRequestInput;
      const { frozen, problems: invalid } = tryFreeze(
        withRelatedUuid(request, waiting.originalUuid, waiting.originalXml ?? undefined),
        csd,
        catalogs,
      );
      const problems =
        invalid ??
        (frozen.stampKey !== dependent.stampKey
          ? [{ path: 'sourceId', message: 'the request no longer derives the stored stamp key' }]
          : undefined);
      if (!frozen || problems) {
        await markDependentNeedsData(tx, dependent.id, problems);
        continue;
      }
      if (await markDependentFrozen(tx, dependent.id, frozen))
        ready.push({ invoiceId: dependent.id, stampKey: dependent.stampKey });
    }
    await enqueueOutbox(
      tx,
      ready.map((r) => ({ kind: 'stamp', ...r })),
    );
    return ready.length;
  });
}

/** Safety net (sweeper): dependents still waiting although their invoice is stamped. */
export async function freezeOverdueDependents(
  prisma: PrismaClient,
  csd: Csd,
  catalogs: OperatorCatalogs = {},
  limit = 100,
): Promise<number> {
  let total = 0;
  for (const id of await invoicesWithOverdueDependents(prisma, limit))
    total += await freezeDependents(prisma, csd, id, catalogs);
  return total;
}
