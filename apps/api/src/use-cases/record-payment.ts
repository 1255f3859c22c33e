import { CfdiError, CfdiValidationError, freezeComprobante, stampKeyFor, type Csd } from '@timbra/cfdi-core';
import type { Prisma } from '@timbra/db';
import { buildIngresoRequest, type InvoiceSettings, type PaymentFacts } from './build-ingreso.ts';

/** Channel the relay LISTENs on; a notification is a hint to look for pending rows now. */
export const OUTBOX_CHANNEL = 'timbra_outbox';

export interface RecordPaymentDeps {
  csd: Csd;
  settings: InvoiceSettings;
  serieIngreso: string;
  emisorId: string;
}

export interface RecordedPayment {
  paymentId: string;
  invoiceId: string | null;
  /** False when the payment was already known (same provider and external id). */
  created: boolean;
}

type Tx = Prisma.TransactionClient;

/**
 * Writes a payment, its Ingreso with a gapless folio and its frozen CFDI, and the outbox row, inside
 * the caller's transaction (so a webhook event or an idempotency record commit with them):
 *
 * 1. insert the payment — or find it (same provider + external id): then nothing else is written;
 * 2. lock the serie's counter row and take its next folio (a rollback gives the number back);
 * 3. freeze the CFDI with Fecha from the payment's time; invalid fiscal data leaves the invoice in
 *    `needs_data` with the reasons, and no outbox row;
 * 4. insert the invoice and the outbox row, and NOTIFY the relay (delivered at commit).
 */
export async function recordPayment(
  tx: Tx,
  deps: RecordPaymentDeps,
  facts: PaymentFacts,
  clientId?: string,
): Promise<RecordedPayment> {
  const inserted = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at, receptor, description, client_id)
    VALUES (gen_random_uuid(), ${facts.provider}, ${facts.externalId}, ${facts.amount}::numeric, ${facts.currency},
            ${facts.occurredAt}, ${facts.receptor ? JSON.stringify(facts.receptor) : null}::jsonb, ${facts.description}, ${clientId ?? null}::uuid)
    ON CONFLICT (provider, external_id) DO NOTHING
    RETURNING id`;
  const paymentId = inserted[0]?.id;
  if (!paymentId) {
    const existing = await tx.payment.findUniqueOrThrow({
      where: { provider_externalId: { provider: facts.provider, externalId: facts.externalId } },
      include: { invoices: { where: { kind: 'I' }, select: { id: true } } },
    });
    return { paymentId: existing.id, invoiceId: existing.invoices[0]?.id ?? null, created: false };
  }

  // The counter row lock serialises folio assignment for this serie only, until commit.
  const counter = await tx.$queryRaw<{ next_folio: number }[]>`
    UPDATE series SET next_folio = next_folio + 1
    WHERE emisor_id = ${deps.emisorId}::uuid AND serie = ${deps.serieIngreso}
    RETURNING next_folio - 1 AS next_folio`;
  const folio = counter[0]?.next_folio;
  if (folio === undefined) throw new Error(`serie ${deps.serieIngreso} is not configured`);

  const request = buildIngresoRequest(facts, deps.serieIngreso, folio, deps.settings);
  const stampKey = stampKeyFor(deps.settings.emisor.rfc, 'I', request.sourceId);
  let frozen;
  let problems: { path: string; message: string }[] | null = null;
  try {
    frozen = freezeComprobante(request, deps.csd);
  } catch (error) {
    if (error instanceof CfdiValidationError) problems = [...error.issues];
    else if (error instanceof CfdiError) problems = [{ path: 'csd', message: `${error.code}: ${error.message}` }];
    else throw error;
  }

  // Invoice, outbox row and NOTIFY in one statement: the serie's row lock is held from the UPDATE
  // above until commit, so every round trip saved here is throughput on this serie.
  const status = frozen ? 'pending' : 'needs_data';
  const [invoice] = await tx.$queryRaw<{ id: string }[]>`
    WITH invoice AS (
      INSERT INTO invoices (id, emisor_id, payment_id, kind, serie, folio, fecha, moneda, sub_total, total, status, problems,
                           stamp_key, frozen_xml, cadena_original)
      VALUES (gen_random_uuid(), ${deps.emisorId}::uuid, ${paymentId}::uuid, 'I', ${deps.serieIngreso}, ${folio}, ${frozen?.fecha ?? null},
              ${facts.currency}, ${frozen?.subTotal ?? facts.amount}::numeric, ${frozen?.total ?? facts.amount}::numeric, ${status},
              ${problems ? JSON.stringify(problems) : null}::jsonb, ${stampKey}, ${frozen?.xml ?? null}, ${frozen?.cadenaOriginal ?? null})
      RETURNING id
    ), outbox AS (
      INSERT INTO outbox (id, kind, invoice_id, stamp_key)
      SELECT gen_random_uuid(), 'stamp', invoice.id, ${stampKey} FROM invoice WHERE ${frozen !== undefined}
      RETURNING id
    )
    SELECT invoice.id, (SELECT pg_notify(${OUTBOX_CHANNEL}, outbox.id::text)::text FROM outbox) AS notified FROM invoice`;
  if (!invoice) throw new Error('invoice insert returned no row');
  return { paymentId, invoiceId: invoice.id, created: true };
}
