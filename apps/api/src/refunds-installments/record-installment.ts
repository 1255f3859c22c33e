import { BigNumber } from 'bignumber.js';
import { isUuid, type RawDb } from '@timbra/db';
import { takeFolio } from '@timbra/db/invoices';
import {
  insertInstallment,
  installmentByProviderId,
  installmentAmounts,
  installmentsPaid,
  lockInvoiceForInstallment,
  type InstallmentInvoice,
} from '@timbra/db/payments';
import type { ReceptorInput } from '../payments/build-ingreso.ts';
import { buildPagoRequest, type InstallmentToRecord } from './build-pago.ts';
import { waitingFor, writeDependentInvoice } from '../invoices/dependent-invoice.ts';
import { assertNotInFuture, DomainError } from '../domain-errors.ts';
import { saleDay, tipoCambioOn } from '../payments/exchange-rates.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';

export type { InstallmentToRecord };

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
 * @throws DomainError not_found (404) for an unknown invoice; not_installments (409) when it is not a
 *   PPD Ingreso; installment_conflict (409) when this installment was recorded with other data;
 *   installment_exceeds_balance (422) when it would pay more than is owed.
 */
export async function recordInstallment(
  tx: RawDb,
  deps: RecordPaymentDeps,
  installment: InstallmentToRecord,
): Promise<RecordedInstallment> {
  // The invoice id may come from a provider's metadata: a malformed one names nothing.
  if (!isUuid(installment.invoiceId)) throw new DomainError('not_found');
  assertNotInFuture('paidAt', installment.paidAt);
  const invoice = await lockInvoiceForInstallment(tx, installment.invoiceId);
  if (!invoice) throw new DomainError('not_found');
  if (invoice.kind !== 'I' || invoice.paymentTerms !== 'installments' || !invoice.receptor)
    throw new DomainError('not_installments');

  const existing = await installmentByProviderId(tx, installment);
  if (existing) return recordedBefore(existing, invoice, installment);

  const { saldoAnterior, numParcialidad } = await balanceBefore(tx, invoice, installment.amount);
  const tipoCambioPDelDia =
    invoice.moneda === 'MXN' ? undefined : await paymentDayRate(deps, invoice.moneda, installment);
  // The installment that settles the invoice reports the bases the earlier ones left (cfdi-core).
  const settles = saldoAnterior.isEqualTo(installment.amount);
  const earlierAmounts = settles ? await installmentAmounts(tx, invoice.id) : undefined;
  const installmentId = await insertInstallment(tx, {
    invoiceId: invoice.id,
    provider: installment.provider,
    externalId: installment.externalId,
    amount: installment.amount,
    paidAt: installment.paidAt,
    formaPago: installment.formaPago,
    numParcialidad,
  });

  const folio = await takeFolio(tx, deps.organizationId, deps.seriePago);
  const request = buildPagoRequest(
    {
      serie: invoice.serie,
      folio: invoice.folio,
      moneda: invoice.moneda,
      receptor: invoice.receptor as ReceptorInput,
      subTotal: invoice.subTotal,
      total: invoice.total,
      frozenXml: invoice.frozenXml,
    },
    {
      ...installment,
      numParcialidad,
      saldoAnterior: saldoAnterior.toFixed(2),
      ...(earlierAmounts ? { earlierAmounts } : {}),
      ...(tipoCambioPDelDia ? { tipoCambioPDelDia } : {}),
    },
    deps.seriePago,
    folio,
    new Date(),
    deps.settings,
  );
  const pago = await writeDependentInvoice(tx, deps, {
    kind: 'P',
    request,
    folio,
    paymentId: invoice.paymentId,
    original: invoice,
    originalXml: invoice.frozenXml,
    totals: { subTotal: '0.00', total: '0.00' },
    link: { installmentId },
  });
  return {
    installmentId,
    pagoId: pago.id,
    created: true,
    ...(pago.status === 'waiting' ? { waitingFor: waitingFor(invoice) } : {}),
  };
}

/** An installment recorded before (same provider and external id): the same answer, or a conflict. */
function recordedBefore(
  existing: NonNullable<Awaited<ReturnType<typeof installmentByProviderId>>>,
  invoice: InstallmentInvoice,
  installment: InstallmentToRecord,
): RecordedInstallment {
  if (existing.invoiceId !== invoice.id || !new BigNumber(existing.amount).isEqualTo(installment.amount))
    throw new DomainError('installment_conflict');
  if (!existing.pago) throw new Error(`installment ${existing.id} has no Pago`);
  return {
    installmentId: existing.id,
    pagoId: existing.pago.id,
    created: false,
    ...(existing.pago.status === 'waiting' ? { waitingFor: waitingFor(invoice) } : {}),
  };
}

/**
 * The invoice's balance before this installment and its number (parcialidad); refused when the
 * installment is more than the balance.
 */
async function balanceBefore(
  tx: RawDb,
  invoice: InstallmentInvoice,
  amount: string,
): Promise<{ saldoAnterior: BigNumber; numParcialidad: number }> {
  const paid = await installmentsPaid(tx, invoice.id);
  const saldoAnterior = new BigNumber(invoice.total).minus(paid.sum);
  if (new BigNumber(amount).isGreaterThan(saldoAnterior))
    throw new DomainError('installment_exceeds_balance', undefined, [
      { path: 'amount', message: `the invoice's balance is ${saldoAnterior.toFixed(2)} (total ${invoice.total})` },
    ]);
  return { saldoAnterior, numParcialidad: paid.count + 1 };
}

/**
 * TipoCambioP of an installment in another currency: the rate of FechaPago's day (the REP 2.0 guide,
 * CRP20216), the caller's own checked against it. Undefined for a provider's money without one (the
 * sale's rate stands in, as the money is recorded whatever).
 *
 * @throws DomainError exchange_rate_unavailable, exchange_rate_out_of_range (a REST call), or
 *   exchange_rate_source_down.
 */
async function paymentDayRate(
  deps: RecordPaymentDeps,
  moneda: string,
  installment: InstallmentToRecord,
): Promise<string | undefined> {
  const given = installment.tipoCambioP ? { rate: installment.tipoCambioP, source: 'request' } : undefined;
  const found = await tipoCambioOn(deps.rates, moneda, saleDay(installment.paidAt), given, 'tipoCambioP');
  if ('rate' in found) return found.rate;
  if (installment.strictRate) throw new DomainError(found.code, undefined, [found.problem]);
  return undefined;
}
