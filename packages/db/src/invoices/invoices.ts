/**
 * Invoice rows: the set-wise insert (with the outbox rows of the ones ready to stamp, in the same
 * statement), the locks the use cases take, and the status writes of freezing (dependent documents:
 * dependents.ts). Statuses follow invoice-status.ts; the database refuses anything else.
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import {
  INITIAL_STATUSES,
  INVOICE_STATUSES,
  InvalidTransitionError,
  statusGuard,
  type InvoiceStatus,
} from './invoice-status.ts';
import { notifyOutboxSql, outboxInsertSql } from '../outbox/outbox.ts';
import { col, execute, queryRows, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const insertInvoicesRow = z.object({ id: col.uuid, organization_id: col.uuid, stamp_key: col.text });

const standingRelatedCountRow = z.object({ n: col.int });

export type InvoiceKind = 'I' | 'E' | 'P';

/** A document as frozen by cfdi-core (the fields stored). */
export interface FrozenDocument {
  xml: string;
  cadenaOriginal: string;
  fecha: string;
  subTotal: string;
  total: string;
}

export interface NewInvoice {
  /** Its organization, when a statement writes several organizations' invoices (else `insertInvoices`'s). */
  organizationId?: string;
  kind: InvoiceKind;
  serie: string;
  folio: number;
  paymentId: string | null;
  refundId?: string | null;
  installmentId?: string | null;
  /** The invoice a dependent document relates to (an Egreso's or a Pago's Ingreso). */
  relatedInvoiceId?: string | null;
  stampKey: string;
  moneda: string;
  /** `pending` (frozen, gets its outbox row), `needs_data` (with problems) or `waiting` (with its request). */
  status: InvoiceStatus;
  frozen?: FrozenDocument | undefined;
  /** SubTotal and Total while not frozen. */
  totals: { subTotal: string; total: string };
  problems?: unknown;
  /** The request it is built from: frozen later (status waiting), or kept to rebuild a correction. */
  request?: unknown;
}

/**
 * Inserts invoices, and for each `pending` one its outbox row with a NOTIFY, in one statement of the
 * caller's transaction (the serie's counter row may be locked until commit: every round trip saved
 * is throughput). Each invoice is of its own `organizationId`, else of `organizationId` (null: each
 * names its own). @returns the new invoices' ids, in input order.
 */
export async function insertInvoices(
  tx: RawDb,
  organizationId: string | null,
  invoices: readonly NewInvoice[],
): Promise<string[]> {
  if (invoices.length === 0) return [];
  for (const i of invoices) {
    if (!INITIAL_STATUSES.includes(i.status)) throw new InvalidTransitionError(null, i.status);
    if ((i.status === 'pending') !== (i.frozen !== undefined))
      throw new Error(`invoice ${i.serie}-${i.folio}: frozen if and only if pending`);
  }
  const c = <T>(f: (i: NewInvoice) => T): T[] => invoices.map(f);
  const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  const rows = await queryRows(
    tx,
    insertInvoicesRow,
    Prisma.sql`
      WITH input AS (
        SELECT * FROM unnest(
          ${c((i) => i.paymentId)}::uuid[], ${c((i) => i.refundId ?? null)}::uuid[], ${c((i) => i.installmentId ?? null)}::uuid[],
          ${c((i) => i.relatedInvoiceId ?? null)}::uuid[], ${c((i) => i.kind)}::text[], ${c((i) => i.serie)}::text[],
          ${c((i) => i.folio)}::int[], ${c((i) => i.frozen?.fecha ?? null)}::text[], ${c((i) => i.moneda)}::text[],
          ${c((i) => i.frozen?.subTotal ?? i.totals.subTotal)}::numeric[], ${c((i) => i.frozen?.total ?? i.totals.total)}::numeric[],
          ${c((i) => i.status)}::invoice_status[], ${c((i) => json(i.problems))}::jsonb[], ${c((i) => i.stampKey)}::text[],
          ${c((i) => i.frozen?.xml ?? null)}::text[], ${c((i) => i.frozen?.cadenaOriginal ?? null)}::text[],
          ${c((i) => json(i.request))}::jsonb[], ${c((i) => i.organizationId ?? organizationId)}::uuid[]
        ) WITH ORDINALITY AS i(payment_id, refund_id, installment_id, related_invoice_id, kind, serie, folio, fecha, moneda,
                               sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original, request,
                               organization_id, ord)
      ), invoice AS (
        INSERT INTO invoices (id, organization_id, payment_id, refund_id, installment_id, related_invoice_id, kind, serie, folio,
                              fecha, moneda, sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original, request)
        SELECT timbra_uuid7(), organization_id, payment_id, refund_id, installment_id, related_invoice_id, kind, serie,
               folio, fecha, moneda, sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original, request
        FROM input ORDER BY ord
        RETURNING id, organization_id, stamp_key, status
      ), outbox AS (
        ${outboxInsertSql(Prisma.sql`
          SELECT 'stamp' AS kind, id AS invoice_id, stamp_key, NULL::uuid AS cancel_request_id, organization_id
          FROM invoice WHERE status = 'pending'`)}
      )
      SELECT invoice.id, invoice.organization_id, invoice.stamp_key, ${notifyOutboxSql(Prisma.sql`outbox`)} AS notified
      FROM invoice`,
  );
  // A stamp key is unique in its organization: several organizations' invoices may share one.
  const idOf = new Map(rows.map((r) => [`${r.organization_id}\u0000${r.stamp_key}`, r.id]));
  return invoices.map((i) => {
    const id = idOf.get(`${(i.organizationId ?? organizationId ?? '').toLowerCase()}\u0000${i.stampKey}`);
    if (!id) throw new Error('invoice insert returned no row');
    return id;
  });
}

/** An invoice as the lifecycle use cases see it. */
export interface InvoiceState {
  id: string;
  status: InvoiceStatus;
  uuid: string | null;
}

const invoiceState = z.object({ id: col.uuid, status: z.enum(INVOICE_STATUSES), uuid: z.string().nullable() });

/** An invoice's state, or undefined. */
export async function invoiceStateOf(db: RawDb, invoiceId: string): Promise<InvoiceState | undefined> {
  const [row] = await queryRows(
    db,
    invoiceState,
    Prisma.sql`SELECT id, status::text, uuid FROM invoices WHERE id = ${invoiceId}::uuid`,
  );
  return row;
}

/**
 * An invoice's state, its row locked FOR SHARE until commit: what a dependent document (an Egreso, a
 * Pago) reads its original with. A stamp of the original (an UPDATE) waits for the dependent's
 * transaction, and the worker looks for dependents after it; a dependent read after a stamp sees it.
 * Either way the dependent is frozen at once, not by the sweeper.
 */
export async function lockInvoiceShared(tx: RawDb, invoiceId: string): Promise<InvoiceState | undefined> {
  const [row] = await queryRows(
    tx,
    invoiceState,
    Prisma.sql`SELECT id, status::text, uuid FROM invoices WHERE id = ${invoiceId}::uuid FOR SHARE`,
  );
  return row;
}

/** Locks an invoice's row until commit (FOR UPDATE) and returns its state, or undefined. */
export async function lockInvoice(tx: RawDb, invoiceId: string): Promise<InvoiceState | undefined> {
  const [row] = await queryRows(
    tx,
    invoiceState,
    Prisma.sql`SELECT id, status::text, uuid FROM invoices WHERE id = ${invoiceId}::uuid FOR UPDATE`,
  );
  return row;
}

/** The Ingreso of a payment (its state) — the one no other replaces (TipoRelacion 04) — or undefined. */
export async function ingresoOf(db: RawDb, paymentId: string): Promise<InvoiceState | undefined> {
  const [row] = await queryRows(
    db,
    invoiceState,
    Prisma.sql`SELECT i.id, i.status::text, i.uuid FROM invoices i
               WHERE i.payment_id = ${paymentId}::uuid AND i.kind = 'I'
                 AND NOT EXISTS (SELECT 1 FROM invoices r WHERE r.replaces_invoice_id = i.id)`,
  );
  return row;
}

/**
 * The invoice whose CFDI has this UUID (upper or lower case), or undefined. Stamps are stored upper
 * case; the unique index answers (a function of the column would read every invoice).
 */
export async function invoiceByUuid(db: RawDb, uuid: string): Promise<InvoiceState | undefined> {
  const [row] = await queryRows(
    db,
    invoiceState,
    Prisma.sql`SELECT id, status::text, uuid FROM invoices WHERE uuid = ANY (ARRAY[upper(${uuid}), lower(${uuid})])`,
  );
  return row;
}

/** How many documents (Egresos, Pagos) relate to an invoice and are not cancelled. */
export async function standingRelatedCount(db: RawDb, invoiceId: string): Promise<number> {
  const [row] = await queryRows(
    db,
    standingRelatedCountRow,
    Prisma.sql`SELECT count(*)::int AS n FROM invoices WHERE related_invoice_id = ${invoiceId}::uuid AND status <> 'cancelled'`,
  );
  return row?.n ?? 0;
}

const CANCEL_REQUESTED = statusGuard(['stamped'], 'cancel_requested');

/** stamped → cancel_requested. @returns whether the invoice moved. */
export async function markCancelRequested(tx: RawDb, invoiceId: string): Promise<boolean> {
  return (
    (await execute(
      tx,
      Prisma.sql`UPDATE invoices SET status = 'cancel_requested', updated_at = now()
                 WHERE id = ${invoiceId}::uuid AND ${CANCEL_REQUESTED}`,
    )) === 1
  );
}
