import { stampKeyFor, tryFreeze, type Csd } from '@timbra/cfdi-core';
import { OUTBOX_CHANNEL, type Prisma } from '@timbra/db';
import { buildIngresoRequest, type InvoiceSettings, type PaymentFacts } from './build-ingreso.ts';

export interface RecordPaymentDeps {
  csd: Csd;
  settings: InvoiceSettings;
  serieIngreso: string;
  /** The serie of refunds' Egresos. */
  serieEgreso: string;
  /** The serie of installments' Pagos (complemento de pago). */
  seriePago: string;
  emisorId: string;
}

export interface RecordedPayment {
  paymentId: string;
  invoiceId: string | null;
  /** False when the payment was already known (same provider and external id). */
  created: boolean;
}

type Tx = Prisma.TransactionClient;

/** A payment to record, and the API client that sent it (REST) if any. */
export interface PaymentToRecord {
  facts: PaymentFacts;
  clientId?: string;
}

/**
 * Writes payments, their Ingresos with gapless folios and frozen CFDIs, and the outbox rows, inside
 * the caller's transaction (so webhook events or an idempotency record commit with them). Set-wise,
 * so a batch of payments costs the round trips of one:
 *
 * 1. insert the payments — those already known (same provider + external id, also twice in one
 *    batch) are found instead, and nothing else is written for them — and, in the same statement,
 *    lock the serie's counter row and take one folio per new payment, in the given order (a
 *    rollback gives the numbers back);
 * 2. freeze each CFDI with Fecha from its payment's time; invalid fiscal data leaves that invoice in
 *    `needs_data` with the reasons, and no outbox row;
 * 3. insert the invoices and the outbox rows, and NOTIFY the relay (delivered at commit).
 *
 * @returns one result per payment, in order.
 */
export async function recordPayments(
  tx: Tx,
  deps: RecordPaymentDeps,
  payments: readonly PaymentToRecord[],
): Promise<RecordedPayment[]> {
  if (payments.length === 0) return [];
  const column = <T>(f: (p: PaymentToRecord) => T): T[] => payments.map(f);
  // The counter row is updated (and locked until commit, serialising folio assignment for this
  // serie) only when some payment is new; folios follow the input order.
  const inserted = await tx.$queryRaw<{ id: string; ord: bigint; folio: number | null }[]>`
    WITH input AS (
      SELECT * FROM unnest(
        ${column((p) => p.facts.provider)}::text[], ${column((p) => p.facts.externalId)}::text[],
        ${column((p) => p.facts.amount)}::numeric[], ${column((p) => p.facts.currency)}::text[],
        ${column((p) => p.facts.occurredAt.toISOString())}::timestamptz[],
        ${column((p) => (p.facts.receptor ? JSON.stringify(p.facts.receptor) : null))}::jsonb[],
        ${column((p) => p.facts.description)}::text[], ${column((p) => p.clientId ?? null)}::uuid[],
        ${column((p) => p.facts.formaPago)}::text[], ${column((p) => p.facts.paymentTerms ?? 'single')}::text[]
      ) WITH ORDINALITY AS i(provider, external_id, amount, currency, occurred_at, receptor, description, client_id, forma_pago,
                             payment_terms, ord)
    ), payment AS (
      INSERT INTO payments (id, provider, external_id, amount, currency, occurred_at, receptor, description, client_id,
                            forma_pago, payment_terms)
      SELECT gen_random_uuid(), provider, external_id, amount, currency, occurred_at, receptor, description, client_id,
             forma_pago, payment_terms
      FROM input ORDER BY ord
      ON CONFLICT (provider, external_id) DO NOTHING
      RETURNING id, provider, external_id
    ), numbered AS (
      -- A payment named twice in the batch is inserted once: it takes the folio of its first mention.
      SELECT id, ord, row_number() OVER (ORDER BY ord) AS n
      FROM (SELECT payment.id, min(input.ord) AS ord FROM payment JOIN input USING (provider, external_id) GROUP BY payment.id) AS firsts
    ), counter AS (
      UPDATE series SET next_folio = next_folio + (SELECT count(*) FROM payment)
      WHERE emisor_id = ${deps.emisorId}::uuid AND serie = ${deps.serieIngreso} AND EXISTS (SELECT 1 FROM payment)
      RETURNING next_folio - (SELECT count(*) FROM payment) AS first_folio
    )
    SELECT numbered.id, numbered.ord, (counter.first_folio + numbered.n - 1)::int AS folio
    FROM numbered LEFT JOIN counter ON true`;
  if (inserted.some((row) => row.folio === null)) throw new Error(`serie ${deps.serieIngreso} is not configured`);

  const results: (RecordedPayment | undefined)[] = payments.map(() => undefined);
  const invoices = inserted.map(({ id: paymentId, ord, folio }) => {
    const index = Number(ord) - 1;
    const facts = payments[index]!.facts;
    const request = buildIngresoRequest(facts, deps.serieIngreso, folio!, deps.settings);
    const stampKey = stampKeyFor(deps.settings.emisor.rfc, 'I', request.sourceId);
    // A sale in installments is paid with Pagos that name the customer: público en general won't do.
    const { frozen, problems } =
      facts.paymentTerms === 'installments' && !facts.receptor
        ? {
            frozen: undefined,
            problems: [{ path: 'receptor', message: 'a sale in installments needs the customer (metadata rfc, …)' }],
          }
        : tryFreeze(request, deps.csd);
    return { index, paymentId, facts, folio: folio!, stampKey, frozen, problems };
  });

  if (invoices.length > 0) {
    const col = <T>(f: (i: (typeof invoices)[number]) => T): T[] => invoices.map(f);
    // Invoices, outbox rows (for the frozen ones) and NOTIFY in one statement: the serie's row lock
    // is held from the UPDATE above until commit, so every round trip saved is throughput.
    const rows = await tx.$queryRaw<{ id: string; payment_id: string }[]>`
      WITH input AS (
        SELECT * FROM unnest(
          ${col((i) => i.paymentId)}::uuid[], ${col((i) => i.folio)}::int[], ${col((i) => i.frozen?.fecha ?? null)}::text[],
          ${col((i) => i.facts.currency)}::text[], ${col((i) => i.frozen?.subTotal ?? i.facts.amount)}::numeric[],
          ${col((i) => i.frozen?.total ?? i.facts.amount)}::numeric[], ${col((i) => (i.frozen ? 'pending' : 'needs_data'))}::text[],
          ${col((i) => (i.problems ? JSON.stringify(i.problems) : null))}::jsonb[], ${col((i) => i.stampKey)}::text[],
          ${col((i) => i.frozen?.xml ?? null)}::text[], ${col((i) => i.frozen?.cadenaOriginal ?? null)}::text[]
        ) AS i(payment_id, folio, fecha, moneda, sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original)
      ), invoice AS (
        INSERT INTO invoices (id, emisor_id, payment_id, kind, serie, folio, fecha, moneda, sub_total, total, status, problems,
                             stamp_key, frozen_xml, cadena_original)
        SELECT gen_random_uuid(), ${deps.emisorId}::uuid, payment_id, 'I', ${deps.serieIngreso}, folio, fecha, moneda,
               sub_total, total, status, problems, stamp_key, frozen_xml, cadena_original
        FROM input ORDER BY folio
        RETURNING id, payment_id, stamp_key, status
      ), outbox AS (
        INSERT INTO outbox (id, kind, invoice_id, stamp_key)
        SELECT gen_random_uuid(), 'stamp', invoice.id, invoice.stamp_key FROM invoice WHERE invoice.status = 'pending'
        RETURNING id
      )
      SELECT invoice.id, invoice.payment_id,
             (SELECT count(pg_notify(${OUTBOX_CHANNEL}, outbox.id::text)) FROM outbox) AS notified
      FROM invoice`;
    const invoiceOf = new Map(rows.map((r) => [r.payment_id, r.id]));
    for (const i of invoices) {
      const invoiceId = invoiceOf.get(i.paymentId);
      if (!invoiceId) throw new Error('invoice insert returned no row');
      results[i.index] = { paymentId: i.paymentId, invoiceId, created: true };
    }
  }

  // Payments known before (or twice in this batch): their rows as they are.
  const known = payments.flatMap((p, index) => (results[index] ? [] : [{ p, index }]));
  if (known.length > 0) {
    const existing = await tx.payment.findMany({
      where: { OR: known.map(({ p }) => ({ provider: p.facts.provider, externalId: p.facts.externalId })) },
      select: { id: true, provider: true, externalId: true, invoices: { where: { kind: 'I' }, select: { id: true } } },
    });
    const byKey = new Map(existing.map((e) => [`${e.provider}\u0000${e.externalId}`, e]));
    for (const { p, index } of known) {
      const found = byKey.get(`${p.facts.provider}\u0000${p.facts.externalId}`);
      if (!found) throw new Error('a conflicting payment was not found');
      results[index] = { paymentId: found.id, invoiceId: found.invoices[0]?.id ?? null, created: false };
    }
  }
  return results as RecordedPayment[];
}

/** `recordPayments` for one payment. */
export async function recordPayment(
  tx: Tx,
  deps: RecordPaymentDeps,
  facts: PaymentFacts,
  clientId?: string,
): Promise<RecordedPayment> {
  const [recorded] = await recordPayments(tx, deps, [{ facts, ...(clientId ? { clientId } : {}) }]);
  return recorded!;
}
