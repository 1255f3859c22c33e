/**
 * Refunds: the rows of a payment's refunds (each with its Egreso, or before its global), looked up by
 * the provider's id, totalled, inserted under the payment's lock, and reversed when the provider says
 * the refund failed.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { col, queryRows, type RawDb } from '../sql.ts';

const refundedTotalRow = z.object({ refunded: col.text });

const insertRefundRow = z.object({ id: col.uuid });

const refundByProviderIdRow = z.object({
  id: col.uuid,
  payment_id: col.uuid,
  amount: col.text,
  egreso_id: col.uuid.nullable(),
  egreso_status: col.text.nullable(),
});

const refundLinesRow = z.object({ lines: col.json });

/** A refund as recorded, found by the provider's id, with its Egreso if it has one. */
export async function refundByProviderId(
  db: RawDb,
  refund: { provider: string; externalId: string },
): Promise<
  { id: string; paymentId: string; amount: string; egreso: { id: string; status: string } | null } | undefined
> {
  const [row] = await queryRows(
    db,
    refundByProviderIdRow,
    Prisma.sql`
      SELECT r.id, r.payment_id, r.amount::text, e.id AS egreso_id, e.status::text AS egreso_status
      FROM refunds r LEFT JOIN invoices e ON e.refund_id = r.id
      WHERE r.provider = ${refund.provider} AND r.external_id = ${refund.externalId}`,
  );
  return (
    row && {
      id: row.id,
      paymentId: row.payment_id,
      amount: row.amount,
      egreso: row.egreso_id && row.egreso_status ? { id: row.egreso_id, status: row.egreso_status } : null,
    }
  );
}

/** The `lines` of a payment's refunds that stand (not reversed): what each gave back of which line, or null. */
export async function standingRefundLines(db: RawDb, paymentId: string): Promise<unknown[]> {
  const rows = await queryRows(
    db,
    refundLinesRow,
    Prisma.sql`SELECT lines FROM refunds WHERE payment_id = ${paymentId}::uuid AND status = 'succeeded' ORDER BY id`,
  );
  return rows.map((r) => r.lines);
}

/** What was refunded of a payment so far (decimal string): the refunds that stand (not reversed). */
export async function refundedTotal(tx: RawDb, paymentId: string): Promise<string> {
  const [row] = await queryRows(
    tx,
    refundedTotalRow,
    Prisma.sql`SELECT COALESCE(sum(amount), 0)::text AS refunded FROM refunds WHERE payment_id = ${paymentId}::uuid AND status = 'succeeded'`,
  );
  return row!.refunded;
}

/** Inserts a refund row. @returns its id. */
export async function insertRefund(
  tx: RawDb,
  refund: {
    paymentId: string;
    provider: string;
    externalId: string;
    amount: string;
    occurredAt: Date;
    /** The payment's lines it is for ([{ line, amount }]), when it names them. */
    lines?: unknown;
  },
): Promise<string> {
  const [row] = await queryRows(
    tx,
    insertRefundRow,
    Prisma.sql`
      INSERT INTO refunds (id, payment_id, provider, external_id, amount, occurred_at, lines)
      VALUES (timbra_uuid7(), ${refund.paymentId}::uuid, ${refund.provider}, ${refund.externalId}, ${refund.amount}::numeric,
              ${refund.occurredAt}, ${refund.lines ? JSON.stringify(refund.lines) : null}::jsonb)
      RETURNING id`,
  );
  return row!.id;
}

const reverseRefundRow = z.object({ id: col.uuid, egreso_id: col.uuid.nullable(), egreso_status: col.text.nullable() });

/**
 * Marks a refund `reversed` (the provider reported it failed or canceled after it had succeeded):
 * it no longer counts against its payment. Only a `succeeded` refund moves.
 * @returns the refund and its Egreso (id, status) when this call reversed it; undefined when the
 *   refund is unknown or was reversed before.
 */
export async function reverseRefund(
  tx: RawDb,
  refund: { provider: string; externalId: string },
): Promise<{ id: string; egreso: { id: string; status: string } | undefined } | undefined> {
  const [row] = await queryRows(
    tx,
    reverseRefundRow,
    Prisma.sql`
      UPDATE refunds r SET status = 'reversed', reversed_at = now()
      WHERE r.provider = ${refund.provider} AND r.external_id = ${refund.externalId} AND r.status = 'succeeded'
      RETURNING r.id,
        (SELECT i.id FROM invoices i WHERE i.refund_id = r.id) AS egreso_id,
        (SELECT i.status::text FROM invoices i WHERE i.refund_id = r.id) AS egreso_status`,
  );
  return (
    row && {
      id: row.id,
      egreso: row.egreso_id && row.egreso_status ? { id: row.egreso_id, status: row.egreso_status } : undefined,
    }
  );
}
