import { BigNumber } from 'bignumber.js';
import type { InvoiceRequestInput } from '@timbra/cfdi-core';
import type { NewInstallment } from '@timbra/db';
import { receptorFor, type InvoiceSettings, type ReceptorInput } from './build-ingreso.ts';

/** An amount received against a PPD Ingreso, to record with its Pago (NumParcialidad comes from the record). */
export interface InstallmentToRecord extends Omit<NewInstallment, 'numParcialidad'> {
  /** The payer's operation number (NumOperacion), when the provider gives one. */
  numOperacion?: string;
}

/** The PPD Ingreso an installment pays (part of), as stored. */
export interface PaidInvoice {
  serie: string;
  folio: number;
  moneda: string;
  receptor: ReceptorInput;
  /** The Ingreso's SubTotal (its IVA's Base) and Total (the IVA is the difference). */
  subTotal: string;
  total: string;
}

/** An installment as recorded, with its place among the invoice's installments. */
export type InstallmentFacts = Omit<InstallmentToRecord, 'invoiceId'> & {
  numParcialidad: number;
  /** What was still owed before this installment. */
  saldoAnterior: string;
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
  // The Ingreso's IVA (one concepto: Base = SubTotal, Importe = Total − SubTotal): each Pago reports
  // its share, so the Pagos add up to it (cfdi-core, computePago).
  const documento = {
    base: invoice.subTotal,
    importe: new BigNumber(invoice.total).minus(invoice.subTotal).toFixed(),
    total: invoice.total,
  };
  return {
    tipoDeComprobante: 'P',
    sourceId: `${installment.provider}:installment:${installment.externalId}`,
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
          objetoImpDR: '02',
          trasladosDR: [
            {
              impuesto: '002',
              tipoFactor: 'Tasa',
              tasaOCuota: settings.ivaTasa,
              documento,
            },
          ],
        },
      ],
    },
  };
}
