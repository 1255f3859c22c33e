/**
 * Versions of an invoice's frozen document (the corrections that ask for them: corrections.ts). The one place a new
 * version is written (`freezeVersion`): the old bytes are kept in `invoice_versions`, the new ones go
 * on the invoice under the same serie-folio and stamp key, and the outbox row is armed again for the
 * new version — one transaction. The database refuses anything else (trigger `invoices_guard`:
 * bytes change only with a new version row, never once stamped).
 *
 * Whether the old version may be replaced — every PAC that received it answered that it never
 * stamped it — is proved before this is called: the worker's corrections (`pacsThatReceived` lists
 * whom to ask), or nobody to ask at all (`needs_data`: never frozen; no PAC call for it).
 */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { INVOICE_STATUSES, statusGuard, type InvoiceStatus } from './invoice-status.ts';
import { enqueueOutbox, notifyOutbox } from '../outbox/outbox.ts';
import type { FrozenDocument, InvoiceKind } from './invoices.ts';
import { col, execute, queryRows, type Db, type Tx } from '../sql.ts';

const correctableColumns = z.object({
  id: col.uuid,
  kind: z.enum(['I', 'E', 'P']),
  status: z.enum(INVOICE_STATUSES),
  uuid: z.string().nullable(),
  version: col.int,
  serie: col.text,
  folio: col.int,
  stamp_key: col.text,
  payment_id: z.string().nullable(),
  frozen_xml: z.string().nullable(),
  fecha: z.string().nullable(),
  request: col.json,
  related_uuid: z.string().nullable(),
  related_xml: z.string().nullable(),
  version_frozen_at: z.date(),
  open_correction: z.string().nullable(),
});
const receivedRow = z.object({ pac: col.text, uuid: z.string().nullable(), in_flight: col.bool });
const versionRow = z.object({ version: col.int });
const idRow = z.object({ id: col.uuid });

/** An invoice as a correction sees it, locked until commit. */
export interface CorrectableInvoice {
  id: string;
  kind: InvoiceKind;
  status: InvoiceStatus;
  uuid: string | null;
  version: number;
  serie: string;
  folio: number;
  stampKey: string;
  paymentId: string | null;
  frozenXml: string | null;
  fecha: string | null;
  /** The stored request of a dependent document (Egreso, Pago), if kept. */
  request: unknown;
  /** The UUID of the invoice a dependent document relates to, and its document (a Pago reports its taxes). */
  relatedUuid: string | null;
  relatedXml: string | null;
  /** When the current version was frozen (its Fecha's instant, to the second). */
  versionFrozenAt: Date;
  /** The id of a correction still proving, if any. */
  openCorrection: string | null;
}

/** Locks an invoice (FOR UPDATE) for a correction or a replacement and returns it, or undefined. */
export async function lockCorrectableInvoice(tx: Tx, invoiceId: string): Promise<CorrectableInvoice | undefined> {
  const [row] = await queryRows(
    tx,
    correctableColumns,
    Prisma.sql`
      SELECT i.id, i.kind, i.status::text, i.uuid, i.version, i.serie, i.folio, i.stamp_key, i.payment_id, i.frozen_xml,
             i.fecha, i.request, (SELECT r.uuid FROM invoices r WHERE r.id = i.related_invoice_id) AS related_uuid,
             (SELECT r.frozen_xml FROM invoices r WHERE r.id = i.related_invoice_id) AS related_xml,
             COALESCE((SELECT v.created_at FROM invoice_versions v WHERE v.invoice_id = i.id AND v.version = i.version),
                      i.created_at) AS version_frozen_at,
             (SELECT c.id FROM invoice_corrections c WHERE c.invoice_id = i.id AND c.status = 'proving') AS open_correction
      FROM invoices i WHERE i.id = ${invoiceId}::uuid FOR UPDATE OF i`,
  );
  return (
    row && {
      id: row.id,
      kind: row.kind,
      status: row.status,
      uuid: row.uuid,
      version: row.version,
      serie: row.serie,
      folio: row.folio,
      stampKey: row.stamp_key,
      paymentId: row.payment_id,
      frozenXml: row.frozen_xml,
      fecha: row.fecha,
      request: row.request,
      relatedUuid: row.related_uuid,
      relatedXml: row.related_xml,
      versionFrozenAt: row.version_frozen_at,
      openCorrection: row.open_correction,
    }
  );
}

/** A PAC that received a version: the proof must hear from it that it never stamped it. */
export interface ReceivingPac {
  pac: string;
  /** A UUID one of its answers carried, if any (SW is then asked by UUID first). */
  uuid: string | null;
  /** A call to it is still in flight (recorded, no outcome) and younger than the grace: wait. */
  inFlight: boolean;
}

/**
 * Every PAC that may hold a stamp of `version`: those with a call for it that did not fail in a way
 * that proves the document unprocessed (`transient`: refused, 503, circuit open). A call recorded
 * `in_flight` younger than `graceMs` may still reach the PAC after a lookup: it is flagged.
 */
export async function pacsThatReceived(
  db: Db,
  invoiceId: string,
  version: number,
  graceMs: number,
): Promise<ReceivingPac[]> {
  const rows = await queryRows(
    db,
    receivedRow,
    Prisma.sql`
      SELECT pac, max(uuid) AS uuid,
             bool_or(outcome = 'in_flight' AND created_at > now() - make_interval(secs => ${graceMs / 1000})) AS in_flight
      FROM pac_attempts
      WHERE invoice_id = ${invoiceId}::uuid AND version = ${version} AND outcome <> 'transient'
      GROUP BY pac ORDER BY pac`,
  );
  return rows.map((r) => ({ pac: r.pac, uuid: r.uuid, inFlight: r.in_flight }));
}

/**
 * Takes an invoice's stamp row out of circulation while a correction proves its version was never
 * stamped: `held` (from pending, enqueued or failed). A worker records each PAC call before making it
 * only while the row is pending or enqueued (`recordPacCallInFlight`), so after this commits no new
 * call for the version can start. @returns whether a row was held.
 */
export async function holdStampRow(tx: Tx, invoiceId: string): Promise<boolean> {
  return (
    (await execute(
      tx,
      Prisma.sql`UPDATE outbox SET status = 'held', updated_at = now()
                 WHERE invoice_id = ${invoiceId}::uuid AND kind = 'stamp' AND status IN ('pending', 'enqueued', 'failed')`,
    )) > 0
  );
}

// A new version is stamped like the first: from needs_data (first frozen), from stamp_failed, or in
// place of a pending one whose Fecha can no longer be stamped (no status change then).
const REFROZEN = statusGuard(['needs_data', 'stamp_failed'], 'pending');

export interface NewVersion {
  invoiceId: string;
  /** The version the caller saw (and proved unstamped): the write fails if the invoice moved on. */
  fromVersion: number;
  frozen: FrozenDocument;
  reason: string;
  createdBy: string;
  /** The PACs' answers that the old version was never stamped (kept on the old version's row). */
  proof?: unknown;
  /** What the payment learns with the correction (the customer's data its later Egresos use). */
  payment?: CorrectionPayload['payment'];
}

/**
 * What a correction stores: the corrected invoice request (its Fecha is set when the version is
 * frozen) and what the payment row learns with it.
 */
export interface CorrectionPayload {
  /** The corrected invoice request; absent with `refresh`. */
  request?: unknown;
  /** The same document with a fresh Fecha (cfdi-core `refreshFecha`): a version past its window. */
  refresh?: boolean;
  payment?: { id: string; receptor?: unknown; formaPago?: string; tipoCambio?: string; lines?: unknown };
}

/**
 * Writes a new version of an invoice not stamped: the old one kept (and marked superseded with its
 * proof), the new one on the invoice with status `pending`, its outbox row armed for it (pending,
 * attempts 0) and the relay woken — in the caller's transaction. An invoice never frozen
 * (`needs_data`) gets its version 1. @returns the new version, or undefined when the invoice is no
 * longer at `fromVersion` or is stamped (nothing written).
 */
export async function freezeVersion(tx: Tx, v: NewVersion): Promise<number | undefined> {
  const invoice = await lockCorrectableInvoice(tx, v.invoiceId);
  if (!invoice || invoice.uuid !== null || invoice.version !== v.fromVersion) return undefined;
  if (!['needs_data', 'stamp_failed', 'pending'].includes(invoice.status)) return undefined;
  const next = invoice.frozenXml === null ? invoice.version : invoice.version + 1;
  if (invoice.frozenXml !== null) {
    // The version being replaced: its row (version 1 lives only on the invoice until now), superseded.
    await execute(
      tx,
      Prisma.sql`
        INSERT INTO invoice_versions (id, invoice_id, version, frozen_xml, cadena_original, fecha, stamp_key, reason, created_by, created_at)
        SELECT timbra_uuid7(), id, version, frozen_xml, cadena_original, fecha, stamp_key, 'issued', 'system', created_at
        FROM invoices WHERE id = ${v.invoiceId}::uuid
        ON CONFLICT (invoice_id, version, organization_id) DO NOTHING`,
    );
    await execute(
      tx,
      Prisma.sql`UPDATE invoice_versions SET superseded_at = now(), proof = ${JSON.stringify(v.proof ?? null)}::jsonb
                 WHERE invoice_id = ${v.invoiceId}::uuid AND version = ${invoice.version}`,
    );
    // Its calls a killed worker left in_flight are settled by the proof (no PAC stamped it): interrupted.
    await execute(
      tx,
      Prisma.sql`UPDATE pac_attempts SET outcome = 'interrupted'
                 WHERE invoice_id = ${v.invoiceId}::uuid AND version = ${invoice.version} AND outcome = 'in_flight'`,
    );
  }
  const [written] = await queryRows(
    tx,
    versionRow,
    Prisma.sql`
      WITH version AS (
        INSERT INTO invoice_versions (id, invoice_id, version, frozen_xml, cadena_original, fecha, stamp_key, reason, created_by)
        VALUES (timbra_uuid7(), ${v.invoiceId}::uuid, ${next}, ${v.frozen.xml}, ${v.frozen.cadenaOriginal},
                ${v.frozen.fecha}, ${invoice.stampKey}, ${v.reason}, ${v.createdBy})
        RETURNING version
      )
      UPDATE invoices SET frozen_xml = ${v.frozen.xml}, cadena_original = ${v.frozen.cadenaOriginal}, fecha = ${v.frozen.fecha},
             sub_total = ${v.frozen.subTotal}::numeric, total = ${v.frozen.total}::numeric, version = (SELECT version FROM version),
             problems = NULL, status = 'pending', updated_at = now()
      WHERE id = ${v.invoiceId}::uuid AND (${REFROZEN} OR status = 'pending')
      RETURNING version`,
  );
  if (!written) throw new Error(`invoice ${v.invoiceId}: the new version was not written`);
  await armStampRow(tx, v.invoiceId, invoice.stampKey, next);
  if (v.payment) {
    const { id, receptor, formaPago, tipoCambio, lines } = v.payment;
    await execute(
      tx,
      Prisma.sql`UPDATE payments SET receptor = COALESCE(${receptor === undefined ? null : JSON.stringify(receptor)}::jsonb, receptor),
                        forma_pago = COALESCE(${formaPago ?? null}, forma_pago),
                        tipo_cambio = COALESCE(${tipoCambio ?? null}::numeric, tipo_cambio),
                        lines = COALESCE(${lines === undefined ? null : JSON.stringify(lines)}::jsonb, lines),
                        tipo_cambio_source = CASE WHEN ${tipoCambio ?? null}::numeric IS NULL THEN tipo_cambio_source ELSE 'correction' END
                 WHERE id = ${id}::uuid`,
    );
  }
  return next;
}

/** The invoice's stamp row, pending for `version` (written if it has none), announced at commit. */
async function armStampRow(tx: Tx, invoiceId: string, stampKey: string, version: number): Promise<void> {
  const armed = await queryRows(
    tx,
    idRow,
    Prisma.sql`
      UPDATE outbox SET status = 'pending', version = ${version}, attempts = 0, last_error = NULL,
             available_at = now(), enqueued_at = NULL, updated_at = now()
      WHERE invoice_id = ${invoiceId}::uuid AND kind = 'stamp' AND status <> 'done'
      RETURNING id`,
  );
  if (armed.length > 0) {
    await notifyOutbox(
      tx,
      armed.map((r) => r.id),
    );
    return;
  }
  // Only a document frozen for the first time has no stamp row yet.
  if (version !== 1) throw new Error(`invoice ${invoiceId}: version ${version} has no stamp row to arm`);
  await enqueueOutbox(tx, [{ kind: 'stamp', invoiceId, stampKey }]);
}

// --- Corrections ----------------------------------------------------------------------------------

/**
 * Puts back in circulation the stamp row a refused correction held: `failed` again for a dead-lettered
 * invoice (an operator's re-drive or a new correction), else `pending`.
 */
export async function releaseStampRow(tx: Tx, invoiceId: string): Promise<void> {
  await execute(
    tx,
    Prisma.sql`
      UPDATE outbox o SET status = CASE WHEN i.status = 'stamp_failed' THEN 'failed' ELSE 'pending' END,
             available_at = now(), updated_at = now()
      FROM invoices i WHERE i.id = o.invoice_id AND o.invoice_id = ${invoiceId}::uuid AND o.kind = 'stamp' AND o.status = 'held'`,
  );
  await notifyOutbox(
    tx,
    (
      await queryRows(
        tx,
        idRow,
        Prisma.sql`SELECT id FROM outbox WHERE invoice_id = ${invoiceId}::uuid AND kind = 'stamp' AND status = 'pending'`,
      )
    ).map((r) => r.id),
  );
}
