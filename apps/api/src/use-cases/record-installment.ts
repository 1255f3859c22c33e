import { BigNumber } from 'bignumber.js';
import type { Prisma } from '@timbra/db';
import { ApiError } from '../errors.ts';
import type { ReceptorInput } from './build-ingreso.ts';
import { buildPagoRequest } from './build-pago.ts';
import { takeFolio, waitingFor, writeDependentInvoice } from './dependent-invoice.ts';
import type { RecordPaymentDeps } from './record-payment.ts';

type Tx = Prisma.TransactionClient;

export interface InstallmentToRecord {
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
  numOperacion?: string;
}

export interface RecordedInstallment {
  installmentId: string;
  pagoId: string;
  /** False when this installment (same provider and external id) was recorded before. */
  created: boolean;
  waitingFor?: ReturnType<typeof waitingFor>;
}

/**
 * Records an amount received against a PPD Ingreso and its Pago (complemento de pago 2.0), in the
 * caller's transaction. The Ingreso's row is locked first, so installments of one invoice are
 * numbered one at a time (NumParcialidad 1, 2, …) with consistent balances (ImpSaldoAnt = total −
 * what was paid before; ImpSaldoInsoluto = ImpSaldoAnt − ImpPagado), and never add up to more than
 * the invoice. The Pago takes the next folio of the Pago serie; it is frozen now if the Ingreso is
 * stamped (its UUID is the IdDocumento), otherwise it waits for it like an Egreso.
 *
 * @throws ApiError not_found (404) for an unknown invoice; not_installments (409) when it is not a
 *   PPD Ingreso; installment_conflict (409) when this installment was recorded with other data;
 *   installment_exceeds_balance (422) when it would pay more than is owed.
 */
export async function recordInstallment(
  tx: Tx,
  deps: RecordPaymentDeps,
  installment: InstallmentToRecord,
): Promise<RecordedInstallment> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(installment.invoiceId))
    throw new ApiError('not_found');
  const [invoice] = await tx.$queryRaw<InvoiceRow[]>`
    SELECT i.id, i.status, i.uuid, i.kind, i.serie, i.folio, i.moneda, i.total::text, i.payment_id,
           p.payment_terms, p.receptor
    FROM invoices i JOIN payments p ON p.id = i.payment_id
    WHERE i.id = ${installment.invoiceId}::uuid
    FOR UPDATE OF i`;
  if (!invoice) throw new ApiError('not_found');
  if (invoice.kind !== 'I' || invoice.payment_terms !== 'installments' || !invoice.receptor)
    throw new ApiError('not_installments');

  const existing = await tx.installment.findUnique({
    where: { provider_externalId: { provider: installment.provider, externalId: installment.externalId } },
    include: { pago: { select: { id: true, status: true } } },
  });
  if (existing) {
    if (existing.invoiceId !== invoice.id || !existing.amount.equals(installment.amount))
      throw new ApiError('installment_conflict');
    if (!existing.pago) throw new Error(`installment ${existing.id} has no Pago`);
    return {
      installmentId: existing.id,
      pagoId: existing.pago.id,
      created: false,
      ...(existing.pago.status === 'waiting' ? { waitingFor: waitingFor(invoice) } : {}),
    };
  }

  const [paid] = (await tx.$queryRaw<{ sum: string; count: number }[]>`
    SELECT COALESCE(sum(amount), 0)::text AS sum, count(*)::int AS count
    FROM installments WHERE invoice_id = ${invoice.id}::uuid`) as [{ sum: string; count: number }];
  const saldoAnterior = new BigNumber(invoice.total).minus(paid.sum);
  if (new BigNumber(installment.amount).isGreaterThan(saldoAnterior)) {
    throw new ApiError('installment_exceeds_balance', undefined, [
      { path: 'amount', message: `the invoice's balance is ${saldoAnterior.toFixed(2)} (total ${invoice.total})` },
    ]);
  }
  const numParcialidad = paid.count + 1;
  const [inserted] = (await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO installments (id, invoice_id, provider, external_id, amount, paid_at, forma_pago, num_parcialidad)
    VALUES (gen_random_uuid(), ${invoice.id}::uuid, ${installment.provider}, ${installment.externalId},
            ${installment.amount}::numeric, ${installment.paidAt}, ${installment.formaPago}, ${numParcialidad})
    RETURNING id`) as [{ id: string }];

  const folio = await takeFolio(tx, deps.emisorId, deps.seriePago);
  const request = buildPagoRequest(
    { serie: invoice.serie, folio: invoice.folio, moneda: invoice.moneda, receptor: invoice.receptor },
    { ...installment, numParcialidad, saldoAnterior: saldoAnterior.toFixed(2) },
    deps.seriePago,
    folio,
    new Date(),
    deps.settings,
  );
  const pago = await writeDependentInvoice(
    tx,
    { csd: deps.csd, emisorId: deps.emisorId, emisorRfc: deps.settings.emisor.rfc },
    {
      kind: 'P',
      request,
      folio,
      paymentId: invoice.payment_id,
      original: invoice,
      totals: { subTotal: '0.00', total: '0.00' },
      link: { installmentId: inserted.id },
    },
  );
  return {
    installmentId: inserted.id,
    pagoId: pago.id,
    created: true,
    ...(pago.status === 'waiting' ? { waitingFor: waitingFor(invoice) } : {}),
  };
}

interface InvoiceRow {
  id: string;
  status: string;
  uuid: string | null;
  kind: string;
  serie: string;
  folio: number;
  moneda: string;
  total: string;
  payment_id: string;
  payment_terms: string;
  receptor: ReceptorInput | null;
}
