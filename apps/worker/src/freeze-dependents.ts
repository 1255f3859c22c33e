import { tryFreeze, withRelatedUuid, type Csd, type InvoiceRequestInput } from '@timbra/cfdi-core';
import { OUTBOX_CHANNEL, type PrismaClient } from '@timbra/db';

/**
 * Freezes, once, the documents waiting for `originalId` to be stamped: each `waiting` invoice gets its
 * frozen XML (Fecha from its own business event, as stored in its request), becomes `pending` and gets
 * its outbox row, in one transaction; the relay is woken. Idempotent: only `waiting` rows are taken
 * (FOR UPDATE SKIP LOCKED) and the frozen XML can be written only once (a trigger). Invalid data
 * leaves the dependent in `needs_data` with the reasons. Returns how many were frozen.
 */
export async function freezeDependents(prisma: PrismaClient, csd: Csd, originalId: string): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const [original] = await tx.$queryRaw<
      { uuid: string | null; status: string }[]
    >`SELECT uuid, status FROM invoices WHERE id = ${originalId}::uuid`;
    if (!original?.uuid || original.status !== 'stamped') return 0;
    const waiting = await tx.$queryRaw<{ id: string; request: InvoiceRequestInput; stamp_key: string }[]>`
      SELECT id, request, stamp_key FROM invoices
      WHERE related_invoice_id = ${originalId}::uuid AND status = 'waiting'
      FOR UPDATE SKIP LOCKED`;
    let frozenCount = 0;
    for (const dependent of waiting) {
      const { frozen, problems: invalid } = tryFreeze(withRelatedUuid(dependent.request, original.uuid), csd);
      const problems =
        invalid ??
        (frozen.stampKey !== dependent.stamp_key
          ? [{ path: 'sourceId', message: 'the request no longer derives the stored stamp key' }]
          : undefined);
      if (!frozen || problems) {
        await tx.$executeRaw`UPDATE invoices SET status = 'needs_data', problems = ${JSON.stringify(problems)}::jsonb, updated_at = now() WHERE id = ${dependent.id}::uuid`;
        continue;
      }
      await tx.$executeRaw`
        UPDATE invoices SET frozen_xml = ${frozen.xml}, cadena_original = ${frozen.cadenaOriginal}, fecha = ${frozen.fecha},
               sub_total = ${frozen.subTotal}::numeric, total = ${frozen.total}::numeric, status = 'pending', updated_at = now()
        WHERE id = ${dependent.id}::uuid AND status = 'waiting'`;
      await tx.$executeRaw`
        INSERT INTO outbox (id, kind, invoice_id, stamp_key) VALUES (gen_random_uuid(), 'stamp', ${dependent.id}::uuid, ${dependent.stamp_key})
        ON CONFLICT (stamp_key) DO NOTHING`;
      frozenCount++;
    }
    if (frozenCount > 0) await tx.$executeRaw`SELECT pg_notify(${OUTBOX_CHANNEL}, ${originalId})::text`;
    return frozenCount;
  });
}

/** Safety net (sweeper): dependents still waiting although their invoice is stamped. */
export async function freezeOverdueDependents(prisma: PrismaClient, csd: Csd, limit = 100): Promise<number> {
  const originals = await prisma.$queryRaw<{ id: string }[]>`
    SELECT DISTINCT o.id FROM invoices d JOIN invoices o ON o.id = d.related_invoice_id
    WHERE d.status = 'waiting' AND o.status = 'stamped' LIMIT ${limit}`;
  let total = 0;
  for (const o of originals) total += await freezeDependents(prisma, csd, o.id);
  return total;
}
