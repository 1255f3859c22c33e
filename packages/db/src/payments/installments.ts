/** Installments of a sale in parcialidades (PPD), each documented by a Pago. */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { INVOICE_STATUSES, type InvoiceStatus } from '../invoices/invoice-status.ts';
import { col, queryRows, type RawDb } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const lockInvoiceForInstallmentRow = z.object({
  id: col.uuid,
  status: z.enum(INVOICE_STATUSES),
  uuid: z.string().nullable(),
  kind: col.text,
  serie: col.text,
  folio: col.int,
  moneda: col.text,
  sub_total: col.text,
  total: col.text,
  payment_id: col.uuid,
  payment_terms: col.text,
  receptor: col.json,
  frozen_xml: z.string().nullable(),
});
const installmentsPaidRow = z.object({ sum: col.text, count: col.int });
const insertInstallmentRow = z.object({ id: col.uuid });
const installmentByProviderIdRow = z.object({
  id: col.uuid,
  invoice_id: col.uuid,
  amount: col.text,
  pago_id: col.uuid.nullable(),
  pago_status: col.text.nullable(),
});

/** An Ingreso locked for an installment, with its payment's terms and receptor. */
export interface InstallmentInvoice {
  id: string;
  status: InvoiceStatus;
  uuid: string | null;
  kind: string;
  serie: string;
  folio: number;
  moneda: string;
  subTotal: string;
  total: string;
  paymentId: string;
  paymentTerms: string;
  receptor: unknown;
  /** The Ingreso's frozen document (its taxes and TipoCambio are what its Pagos report), null until frozen. */
  frozenXml: string | null;
}

/** Locks an invoice's row until commit (installments are numbered once, balances stay consistent). */
export async function lockInvoiceForInstallment(tx: RawDb, invoiceId: string): Promise<InstallmentInvoice | undefined> {
  const [row] = await queryRows(
    tx,
    lockInvoiceForInstallmentRow,
    Prisma.sql`
      SELECT i.id, i.status::text, i.uuid, i.kind, i.serie, i.folio, i.moneda, i.sub_total::text, i.total::text, i.payment_id,
             p.payment_terms, p.receptor, i.frozen_xml
      FROM invoices i JOIN payments p ON p.id = i.payment_id
      WHERE i.id = ${invoiceId}::uuid
      FOR UPDATE OF i`,
  );
  return (
    row && {
      id: row.id,
      status: row.status,
      uuid: row.uuid,
      kind: row.kind,
      serie: row.serie,
      folio: row.folio,
      moneda: row.moneda,
      subTotal: row.sub_total,
      total: row.total,
      paymentId: row.payment_id,
      paymentTerms: row.payment_terms,
      receptor: row.receptor,
      frozenXml: row.frozen_xml,
    }
  );
}

/** What was paid of an invoice in installments so far (decimal string), and how many. */
export async function installmentsPaid(tx: RawDb, invoiceId: string): Promise<{ sum: string; count: number }> {
  const [row] = await queryRows(
    tx,
    installmentsPaidRow,
    Prisma.sql`SELECT COALESCE(sum(amount), 0)::text AS sum, count(*)::int AS count FROM installments WHERE invoice_id = ${invoiceId}::uuid`,
  );
  return row!;
}

const amountRow = z.object({ amount: z.string() });

/** The amounts of an invoice's installments so far, in their order (NumParcialidad). */
export async function installmentAmounts(tx: RawDb, invoiceId: string): Promise<string[]> {
  const rows = await queryRows(
    tx,
    amountRow,
    Prisma.sql`SELECT amount::text AS amount FROM installments WHERE invoice_id = ${invoiceId}::uuid ORDER BY num_parcialidad`,
  );
  return rows.map((r) => r.amount);
}

/** An amount received against a PPD Ingreso. */
export interface NewInstallment {
  /** The PPD Ingreso paid (in part). */
  invoiceId: string;
  provider: string;
  externalId: string;
  /** Received, as a decimal string. */
  amount: string;
  /** FechaPago. */
  paidAt: Date;
  /** c_FormaPago of this installment (never 99). */
  formaPago: string;
  /** Its place among the invoice's installments (1, 2, …). */
  numParcialidad: number;
}

/** Inserts an installment row. @returns its id. */
export async function insertInstallment(tx: RawDb, i: NewInstallment): Promise<string> {
  const [row] = await queryRows(
    tx,
    insertInstallmentRow,
    Prisma.sql`
      INSERT INTO installments (id, invoice_id, provider, external_id, amount, paid_at, forma_pago, num_parcialidad)
      VALUES (timbra_uuid7(), ${i.invoiceId}::uuid, ${i.provider}, ${i.externalId}, ${i.amount}::numeric, ${i.paidAt},
              ${i.formaPago}, ${i.numParcialidad})
      RETURNING id`,
  );
  return row!.id;
}

/** An installment as recorded, found by the provider's id, with its Pago if it has one. */
export async function installmentByProviderId(
  db: RawDb,
  installment: { provider: string; externalId: string },
): Promise<{ id: string; invoiceId: string; amount: string; pago: { id: string; status: string } | null } | undefined> {
  const [row] = await queryRows(
    db,
    installmentByProviderIdRow,
    Prisma.sql`
      SELECT n.id, n.invoice_id, n.amount::text, p.id AS pago_id, p.status::text AS pago_status
      FROM installments n LEFT JOIN invoices p ON p.installment_id = n.id
      WHERE n.provider = ${installment.provider} AND n.external_id = ${installment.externalId}`,
  );
  return (
    row && {
      id: row.id,
      invoiceId: row.invoice_id,
      amount: row.amount,
      pago: row.pago_id && row.pago_status ? { id: row.pago_id, status: row.pago_status } : null,
    }
  );
}
