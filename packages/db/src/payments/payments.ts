/** Payments: the set-wise insert that takes the folios, the known ones, and the payment's lock (refunds: refunds.ts). */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { SerieNotConfiguredError, takeFoliosOfSql } from '../invoices/folios.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const insertPaymentsTakingFoliosRow = z.object({ id: col.uuid, ord: col.bigint, folio: col.int.nullable() });

const lockPaymentRow = z.object({
  id: col.uuid,
  amount: col.text,
  currency: col.text,
  receptor: col.json,
  forma_pago: z.string().nullable(),
  lines: col.json,
  tipo_cambio: z.string().nullable(),
});

const knownPaymentRow = z.object({
  id: col.uuid,
  organization_id: col.uuid,
  provider: col.text,
  external_id: col.text,
  ingreso_id: col.uuid.nullable(),
  ticket_id: col.uuid.nullable(),
  ticket_code: col.text.nullable(),
  ticket_period_starts_on: col.text.nullable(),
  ticket_invoice_id: col.uuid.nullable(),
});

export interface NewPayment {
  provider: string;
  externalId: string;
  /** Decimal string. */
  amount: string;
  currency: string;
  occurredAt: Date;
  receptor: unknown;
  description: string | null | undefined;
  clientId?: string | null;
  formaPago: string | null | undefined;
  paymentTerms: 'single' | 'installments';
  /** The sale's resolved lines (JSON), or null for the single default concepto. */
  lines?: unknown;
  customerId?: string | null;
  /** TipoCambio (decimal string) and where it came from; both or neither. */
  tipoCambio?: { rate: string; source: string } | null;
  /** Where the customer's copy of its invoices is emailed. */
  email?: string | null;
  /** The merchant's own strings (metadata.ts); none: {}. */
  metadata?: Record<string, string>;
}

/** A payment the insert created: its position in the input (0-based) and the folio taken for its invoice. */
export interface InsertedPayment {
  id: string;
  index: number;
  folio: number;
}

/** A payment to insert taking a folio: its organization, and the serie its Ingreso takes the folio of. */
export type PaymentTakingFolio = NewPayment & { organizationId: string; serie: string };

/**
 * Inserts payments — those already known (same organization, provider and external id, also twice
 * in one batch) are skipped — and, in the same statement, takes one folio of each payment's serie
 * (its organization's) per new payment, in input order (a counter row is locked only when some
 * payment of it is new). The payments may be of several organizations (a session naming them all).
 * @returns the new payments.
 * @throws SerieNotConfiguredError
 */
export async function insertPaymentsTakingFolios(
  tx: RawDb,
  payments: readonly PaymentTakingFolio[],
): Promise<InsertedPayment[]> {
  const rows = await insertPaymentRows(tx, payments);
  const unnumbered = rows.find((r) => r.folio === null);
  if (unnumbered) throw new SerieNotConfiguredError(payments[unnumbered.index]!.serie);
  return rows.map((r) => ({ ...r, folio: r.folio! }));
}

/** `insertPaymentsTakingFolios` for payments whose invoice waits (tickets), in the session's organization: no folio is taken. */
export async function insertPaymentsWithoutFolios(
  tx: RawDb,
  payments: readonly NewPayment[],
): Promise<Omit<InsertedPayment, 'folio'>[]> {
  const rows = await insertPaymentRows(tx, payments);
  return rows.map(({ id, index }) => ({ id, index }));
}

async function insertPaymentRows(
  tx: RawDb,
  payments: readonly (NewPayment & { organizationId?: string; serie?: string })[],
): Promise<{ id: string; index: number; folio: number | null }[]> {
  if (payments.length === 0) return [];
  const c = <T>(f: (p: NewPayment & { organizationId?: string; serie?: string }) => T): T[] => payments.map(f);
  const rows = await queryRows(
    tx,
    insertPaymentsTakingFoliosRow,
    Prisma.sql`
      WITH input AS (
        SELECT coalesce(i.given_organization_id, (SELECT timbra_organization_or_sole())) AS organization_id, i.* FROM unnest(
          ${c((p) => p.provider)}::text[], ${c((p) => p.externalId)}::text[], ${c((p) => p.amount)}::numeric[],
          ${c((p) => p.currency)}::text[], ${c((p) => p.occurredAt.toISOString())}::timestamptz[],
          ${c((p) => (p.receptor ? JSON.stringify(p.receptor) : null))}::jsonb[], ${c((p) => p.description ?? null)}::text[],
          ${c((p) => p.clientId ?? null)}::uuid[], ${c((p) => p.formaPago ?? null)}::text[], ${c((p) => p.paymentTerms)}::text[],
          ${c((p) => (p.lines ? JSON.stringify(p.lines) : null))}::jsonb[], ${c((p) => p.customerId ?? null)}::uuid[],
          ${c((p) => p.tipoCambio?.rate ?? null)}::numeric[], ${c((p) => p.tipoCambio?.source ?? null)}::text[],
          ${c((p) => p.email ?? null)}::text[], ${c((p) => JSON.stringify(p.metadata ?? {}))}::jsonb[],
          ${c((p) => p.organizationId ?? null)}::uuid[], ${c((p) => p.serie ?? null)}::text[]
        ) WITH ORDINALITY AS i(provider, external_id, amount, currency, occurred_at, receptor, description, client_id, forma_pago,
                               payment_terms, lines, customer_id, tipo_cambio, tipo_cambio_source, email, metadata,
                               given_organization_id, serie, ord)
      ), payment AS (
        INSERT INTO payments (id, organization_id, provider, external_id, amount, currency, occurred_at, receptor, description,
                              client_id, forma_pago, payment_terms, lines, customer_id, tipo_cambio, tipo_cambio_source, email, metadata)
        SELECT timbra_uuid7(), organization_id, provider, external_id, amount, currency, occurred_at, receptor, description,
               client_id, forma_pago, payment_terms, lines, customer_id, tipo_cambio, tipo_cambio_source, email, metadata
        FROM input ORDER BY ord
        ON CONFLICT (organization_id, provider, external_id) DO NOTHING
        RETURNING id, organization_id, provider, external_id
      ), numbered AS (
        -- A payment named twice in the batch is inserted once: it takes the folio of its first mention.
        SELECT id, organization_id, serie, ord, row_number() OVER (PARTITION BY organization_id, serie ORDER BY ord) AS n
        FROM (SELECT payment.id, payment.organization_id, min(input.ord) AS ord, (array_agg(input.serie ORDER BY input.ord))[1] AS serie
              FROM payment JOIN input USING (organization_id, provider, external_id)
              GROUP BY payment.id, payment.organization_id) AS firsts
      ), counter AS (
        ${takeFoliosOfSql(Prisma.sql`SELECT organization_id, serie, count(*)::int AS n FROM numbered WHERE serie IS NOT NULL GROUP BY organization_id, serie`)}
      )
      SELECT numbered.id, numbered.ord, (counter.first_folio + numbered.n - 1)::int AS folio
      FROM numbered LEFT JOIN counter USING (organization_id, serie)`,
  );
  return rows.map((r) => ({ id: r.id, index: r.ord - 1, folio: r.folio }));
}

/** A payment recorded before, as a repeated request or delivery of it is answered. */
export interface KnownPayment {
  id: string;
  organizationId: string;
  provider: string;
  externalId: string;
  /** Its Ingreso (the first, when a correction replaced it); null for a ticket. */
  ingresoId: string | null;
  /** Its ticket (global mode), with the day its period starts (YYYY-MM-DD). */
  ticket: { id: string; code: string; periodStartsOn: string; invoiceId: string | null } | null;
}

/**
 * The payments recorded with these (provider, external id) pairs, each in its organization when it
 * names one (else in any the session sees); unknown pairs are left out.
 */
export async function knownPayments(
  db: RawDb,
  keys: readonly { provider: string; externalId: string; organizationId?: string }[],
): Promise<KnownPayment[]> {
  if (keys.length === 0) return [];
  const rows = await queryRows(
    db,
    knownPaymentRow,
    Prisma.sql`
      SELECT p.id, p.organization_id, p.provider, p.external_id,
             (SELECT i.id FROM invoices i WHERE i.payment_id = p.id AND i.kind = 'I' ORDER BY i.id LIMIT 1) AS ingreso_id,
             t.id AS ticket_id, t.code AS ticket_code, t.period_starts_on::text AS ticket_period_starts_on,
             t.invoice_id AS ticket_invoice_id
      FROM (SELECT DISTINCT * FROM unnest(${keys.map((k) => k.provider)}::text[], ${keys.map((k) => k.externalId)}::text[],
                                          ${keys.map((k) => k.organizationId ?? null)}::uuid[])
              AS k(provider, external_id, organization_id)) AS k
      JOIN payments p ON p.provider = k.provider AND p.external_id = k.external_id
                     AND p.organization_id = coalesce(k.organization_id, p.organization_id)
      LEFT JOIN tickets t ON t.payment_id = p.id`,
  );
  return rows.map((r) => ({
    id: r.id,
    organizationId: r.organization_id,
    provider: r.provider,
    externalId: r.external_id,
    ingresoId: r.ingreso_id,
    ticket:
      r.ticket_id && r.ticket_code && r.ticket_period_starts_on
        ? {
            id: r.ticket_id,
            code: r.ticket_code,
            periodStartsOn: r.ticket_period_starts_on,
            invoiceId: r.ticket_invoice_id,
          }
        : null,
  }));
}

/** A payment locked for a refund: what the Egreso needs. */
export interface LockedPayment {
  id: string;
  amount: string;
  currency: string;
  receptor: unknown;
  formaPago: string | null;
  /** The sale's lines as recorded (null: the single default concepto). */
  lines: unknown;
  tipoCambio: string | null;
}

/**
 * Locks a payment's row until commit (refunds of one payment are serialised, so they never add up to
 * more than was paid), by id or by the provider's id. @returns undefined when unknown.
 *
 * FOR NO KEY UPDATE, not FOR UPDATE: a row that names the payment (an event the stamp of its Ingreso
 * records, a refund) takes FOR KEY SHARE on it, which FOR UPDATE blocks. A refund holding the payment
 * and waiting for the Ingreso's row, while the stamp holding that row waited for the payment, was a
 * deadlock (500s under concurrent refunds); NO KEY UPDATE still serialises refunds of one payment.
 */
export async function lockPayment(
  tx: RawDb,
  where: { id: string } | { provider: string; externalId: string },
): Promise<LockedPayment | undefined> {
  const condition =
    'id' in where
      ? Prisma.sql`id = ${where.id}::uuid`
      : Prisma.sql`provider = ${where.provider} AND external_id = ${where.externalId}`;
  const [row] = await queryRows(
    tx,
    lockPaymentRow,
    Prisma.sql`SELECT id, amount::text, currency, receptor, forma_pago, lines, tipo_cambio::text
          FROM payments WHERE ${condition} FOR NO KEY UPDATE`,
  );
  return (
    row && {
      id: row.id,
      amount: row.amount,
      currency: row.currency,
      receptor: row.receptor,
      formaPago: row.forma_pago,
      lines: row.lines,
      tipoCambio: row.tipo_cambio,
    }
  );
}

/**
 * The customer a payment's invoice names, once known (a ticket self-invoiced, an invoice corrected),
 * and the email the customer gave when the payment had none.
 */
export async function setPaymentReceptor(
  db: Db,
  paymentId: string,
  receptor: Record<string, unknown>,
  email?: string,
): Promise<void> {
  await db.payment.update({
    where: { id: paymentId },
    data: { receptor: receptor as Prisma.InputJsonObject, ...(email ? { email } : {}) },
  });
}
