/**
 * Dependent documents (an Egreso or a Pago of an Ingreso not yet stamped): they wait in `waiting`
 * until their Ingreso is stamped, then are frozen (`pending`) or found to lack data (`needs_data`).
 * Their locks, their freezing writes, and the overdue ones (whether any waits on an invoice just
 * stamped: the stamp's own statement answers it, outbox/stamping.ts).
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { statusGuard } from './invoice-status.ts';
import type { FrozenDocument } from './invoices.ts';
import { col, execute, queryRows, type RawDb } from '../sql.ts';

const originalStateColumns = z.object({
  uuid: z.string().nullable(),
  status: col.text,
  frozen_xml: z.string().nullable(),
});

const waitingDependentColumns = z.object({ id: col.uuid, request: col.json, stamp_key: col.text });

const invoicesWithOverdueDependentsRow = z.object({ id: col.uuid });

// --- Dependent documents (Egreso, Pago) waiting for their invoice's UUID ------------------------------

/** A dependent document waiting for its invoice to be stamped. */
export interface WaitingDependent {
  id: string;
  request: unknown;
  stampKey: string;
}

/**
 * The documents waiting for `originalId`, locked (FOR UPDATE SKIP LOCKED: two workers never freeze
 * the same one), with the original's UUID — none unless the original is stamped.
 */
export async function lockWaitingDependents(
  tx: RawDb,
  originalId: string,
): Promise<{ originalUuid: string; originalXml: string | null; dependents: WaitingDependent[] } | undefined> {
  const [original] = await queryRows(
    tx,
    originalStateColumns,
    Prisma.sql`SELECT uuid, status::text, frozen_xml FROM invoices WHERE id = ${originalId}::uuid`,
  );
  if (!original?.uuid || original.status !== 'stamped') return undefined;
  const rows = await queryRows(
    tx,
    waitingDependentColumns,
    Prisma.sql`
      SELECT id, request, stamp_key FROM invoices
      WHERE related_invoice_id = ${originalId}::uuid AND status = 'waiting'
      FOR UPDATE SKIP LOCKED`,
  );
  return {
    originalUuid: original.uuid,
    originalXml: original.frozen_xml,
    dependents: rows.map((r) => ({ id: r.id, request: r.request, stampKey: r.stamp_key })),
  };
}

const FROZEN_LATE = statusGuard(['waiting'], 'pending');

const NEEDS_DATA_LATE = statusGuard(['waiting'], 'needs_data');

/** waiting → pending with its frozen document. @returns whether it moved. */
export async function markDependentFrozen(tx: RawDb, invoiceId: string, frozen: FrozenDocument): Promise<boolean> {
  return (
    (await execute(
      tx,
      Prisma.sql`
        UPDATE invoices SET frozen_xml = ${frozen.xml}, cadena_original = ${frozen.cadenaOriginal}, fecha = ${frozen.fecha},
               sub_total = ${frozen.subTotal}::numeric, total = ${frozen.total}::numeric, status = 'pending', updated_at = now()
        WHERE id = ${invoiceId}::uuid AND ${FROZEN_LATE}`,
    )) === 1
  );
}

/** waiting → needs_data with the reasons. */
export async function markDependentNeedsData(tx: RawDb, invoiceId: string, problems: unknown): Promise<void> {
  await execute(
    tx,
    Prisma.sql`UPDATE invoices SET status = 'needs_data', problems = ${JSON.stringify(problems)}::jsonb, updated_at = now()
               WHERE id = ${invoiceId}::uuid AND ${NEEDS_DATA_LATE}`,
  );
}

/**
 * Invoices that are stamped while documents that relate to them still wait (the sweeper's safety
 * net, every organization every minute). The waiting documents first, from invoices_waiting_idx
 * (materialized: the planner otherwise started from the organization's stamped invoices, every one
 * of the table's rows read and filtered), then each one's invoice by its key.
 */
export async function invoicesWithOverdueDependents(db: RawDb, limit: number): Promise<string[]> {
  const rows = await queryRows(
    db,
    invoicesWithOverdueDependentsRow,
    Prisma.sql`
      WITH waiting AS MATERIALIZED (
        SELECT DISTINCT d.related_invoice_id AS id FROM invoices d
        WHERE d.status = 'waiting' AND d.related_invoice_id IS NOT NULL
      )
      SELECT o.id FROM waiting w JOIN invoices o ON o.id = w.id WHERE o.status = 'stamped' LIMIT ${limit}`,
  );
  return rows.map((r) => r.id);
}
