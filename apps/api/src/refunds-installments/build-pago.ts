import { BigNumber } from 'bignumber.js';
import { relatedTaxes, sourceIdIn, type InvoiceRequestInput } from '@timbra/cfdi-core';
import type { NewInstallment } from '@timbra/db/payments';
import { receptorFor, type InvoiceSettings, type ReceptorInput } from '../payments/build-ingreso.ts';

/** An amount received against a PPD Ingreso, to record with its Pago (NumParcialidad comes from the record). */
export interface InstallmentToRecord extends Omit<NewInstallment, 'numParcialidad'> {
  /** The payer's operation number (NumOperacion), when the provider gives one. */
  numOperacion?: string;
  /** TipoCambioP the caller gives (REST `tipoCambioP`): checked against the rate of FechaPago's day. */
  tipoCambioP?: string;
  /**
   * A REST call (its caller can fix it): no TipoCambioP for FechaPago's day, or one outside c_Moneda's
   * variation, is refused. A provider's money is recorded whatever: the sale's rate stands in.
   */
  strictRate?: boolean;
}

/** The PPD Ingreso an installment pays (part of), as stored. */
export interface PaidInvoice {
  serie: string;
  folio: number;
  moneda: string;
  receptor: ReceptorInput;
  /** The Ingreso's SubTotal and Total. */
  subTotal: string;
  total: string;
  /** The Ingreso's frozen document: its taxes and TipoCambio are what the Pago reports. */
  frozenXml: string | null;
}

/** An installment as recorded, with its place among the invoice's installments. */
export type InstallmentFacts = Omit<InstallmentToRecord, 'invoiceId'> & {
  numParcialidad: number;
  /** What was still owed before this installment. */
  saldoAnterior: string;
  /** The installment that settles the invoice: the earlier ones' amounts, in order (its BaseDR closes theirs). */
  earlierAmounts?: readonly string[];
  /** TipoCambioP at FechaPago's day (the REP 2.0 guide); absent: the Ingreso's TipoCambio. */
  tipoCambioPDelDia?: string;
};

/**
 * The Pago request (TipoDeComprobante P, complemento de pago 2.0) for one installment of a PPD
 * Ingreso: Pago (FechaPago, FormaDePagoP, MonedaP, Monto) with one DoctoRelacionado — NumParcialidad,
 * ImpSaldoAnt, ImpPagado (ImpSaldoInsoluto, the taxes' BaseDR/ImporteDR and the Totales are computed
 * by cfdi-core) — and, the Ingreso being objeto de impuesto 02, its IVA as TrasladoDR. IdDocumento,
 * the Ingreso's UUID, is set when it is frozen (`withRelatedUuid`). Fecha is `issuedAt` (when the
 * installment was recorded): a PAC only accepts a Fecha of the last 72 hours, whatever FechaPago says.
 */
export function buildPagoRequest(
  invoice: PaidInvoice,
  installment: InstallmentFacts,
  serie: string,
  folio: number,
  issuedAt: Date,
  settings: InvoiceSettings,
): InvoiceRequestInput {
  // The Ingreso's own taxes (every rate, exento, IEPS, retenciones), each with its Base, Importe and
  // the Total: each Pago reports its share, so the Pagos add up to them (cfdi-core computePago). Read
  // again from the Ingreso's document when the Pago is frozen (withRelatedUuid); until the Ingreso is
  // frozen, its IVA at the deployment's rate (Base = SubTotal, Importe = Total − SubTotal).
  const taxes = invoice.frozenXml
    ? relatedTaxes(invoice.frozenXml)
    : {
        objetoImpDR: '02',
        trasladosDR: [
          {
            impuesto: '002',
            tipoFactor: 'Tasa',
            tasaOCuota: settings.ivaTasa,
            documento: {
              base: invoice.subTotal,
              importe: new BigNumber(invoice.total).minus(invoice.subTotal).toFixed(),
              total: invoice.total,
            },
          },
        ],
        retencionesDR: [],
      };
  // A Pago in another currency than MXN: the rate of FechaPago's day (record-installment.ts finds it),
  // else the Ingreso's TipoCambio (that of the sale).
  const tipoCambio =
    installment.tipoCambioPDelDia ??
    (invoice.frozenXml ? /\bTipoCambio="([\d.]+)"/.exec(invoice.frozenXml)?.[1] : undefined);
  return {
    tipoDeComprobante: 'P',
    sourceId: sourceIdIn(settings.emisor, `${installment.provider}:installment:${installment.externalId}`),
    issuedAt: issuedAt.toISOString(),
    serie,
    folio: String(folio),
    lugarExpedicion: settings.emisor.lugarExpedicion,
    moneda: 'XXX',
    emisor: { rfc: settings.emisor.rfc, nombre: settings.emisor.nombre, regimenFiscal: settings.emisor.regimenFiscal },
    receptor: receptorFor(invoice.receptor, settings, ['CP01']),
    pago: {
      fechaPago: installment.paidAt.toISOString(),
      formaDePagoP: installment.formaPago,
      monedaP: invoice.moneda,
      ...(invoice.moneda !== 'MXN' && tipoCambio ? { tipoCambioP: tipoCambio } : {}),
      monto: installment.amount,
      ...(installment.numOperacion ? { numOperacion: installment.numOperacion } : {}),
      doctosRelacionados: [
        {
          // Replaced by the Ingreso's UUID when the Pago is frozen.
          idDocumento: '00000000-0000-0000-0000-000000000000',
          serie: invoice.serie,
          folio: String(invoice.folio),
          monedaDR: invoice.moneda,
          numParcialidad: installment.numParcialidad,
          impSaldoAnt: installment.saldoAnterior,
          impPagado: installment.amount,
          ...taxes,
          ...(installment.earlierAmounts
            ? { pagosAnteriores: earlierPagos(invoice.total, installment.earlierAmounts) }
            : {}),
        },
      ],
    },
  };
}

/** The earlier Pagos' ImpSaldoAnt and ImpPagado, from the invoice's Total and the installments' amounts. */
function earlierPagos(total: string, amounts: readonly string[]): { impSaldoAnt: string; impPagado: string }[] {
  let saldo = new BigNumber(total);
  return amounts.map((amount) => {
    const pago = { impSaldoAnt: saldo.toFixed(2), impPagado: new BigNumber(amount).toFixed(2) };
    saldo = saldo.minus(amount);
    return pago;
  });
}
