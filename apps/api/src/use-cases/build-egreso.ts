import { BigNumber } from 'bignumber.js';
import type { InvoiceRequestInput } from '@timbra/cfdi-core';
import { baseFor, receptorFor, type InvoiceSettings, type ReceptorInput } from './build-ingreso.ts';

/** What a refund's Egreso is built from: the refunded payment, as stored. */
export interface RefundedPayment {
  currency: string;
  /** Unknown for payments recorded before it was kept: the Egreso then needs data. */
  formaPago: string | undefined;
  receptor: ReceptorInput | null;
}

export interface RefundFacts {
  provider: string;
  externalId: string;
  /** Refunded, IVA included, as a decimal string. */
  amount: string;
  occurredAt: Date;
  /** How the money went back (c_FormaPago); default the payment's own, unless that was 99 (PPD). */
  formaPago?: string;
}

/**
 * The Egreso request (nota de crédito) for a refund: the SAT's concepto for devoluciones (ClaveProdServ
 * 84111506, ClaveUnidad ACT, "Devolución"), its base chosen as for the Ingreso so that base + IVA is
 * the refunded amount, the payment's receptor with UsoCFDI G02 where c_UsoCFDI allows it for
 * the customer's régimen, else S01 (público en general: S01), and FormaPago. CfdiRelacionados (TipoRelacion 01, the Ingreso's UUID) is added when
 * it is frozen, once the Ingreso is stamped (`withRelatedUuid`). Fecha is `issuedAt`, the time the refund
 * is recorded; an Egreso that waits for its Ingreso keeps it (the worker never uses now()).
 */
export function buildEgresoRequest(
  payment: RefundedPayment,
  refund: RefundFacts,
  serie: string,
  folio: number,
  settings: InvoiceSettings,
  issuedAt: Date,
): InvoiceRequestInput {
  return {
    tipoDeComprobante: 'E',
    // The refund, not our row id: every freeze of this Egreso derives the same stamp key.
    sourceId: `${refund.provider}:refund:${refund.externalId}`,
    issuedAt: issuedAt.toISOString(),
    serie,
    folio: String(folio),
    lugarExpedicion: settings.emisor.lugarExpedicion,
    moneda: payment.currency,
    ...(formaPagoOf(payment, refund) ? { formaPago: formaPagoOf(payment, refund) } : {}),
    metodoPago: 'PUE',
    emisor: { rfc: settings.emisor.rfc, nombre: settings.emisor.nombre, regimenFiscal: settings.emisor.regimenFiscal },
    receptor: receptorFor(payment.receptor, settings, ['G02', 'S01']),
    conceptos: [
      {
        claveProdServ: '84111506',
        noIdentificacion: refund.externalId.slice(0, 100),
        cantidad: '1',
        claveUnidad: 'ACT',
        descripcion: 'Devolución',
        valorUnitario: baseFor(refund.amount, settings.ivaTasa),
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: settings.ivaTasa }],
      },
    ],
  };
}

/**
 * The Egreso's FormaPago: the refund's, else the payment's — but never 99 (a sale in installments
 * says 99 on its Ingreso): without one the Egreso is `needs_data`, and the refund must say it.
 */
function formaPagoOf(payment: RefundedPayment, refund: RefundFacts): string | undefined {
  const formaPago = refund.formaPago ?? payment.formaPago;
  return formaPago && formaPago !== '99' ? formaPago : undefined;
}

/** SubTotal and Total of that Egreso before it is frozen (what a waiting invoice shows). */
export function egresoTotals(amount: string, tasa: string): { subTotal: string; total: string } {
  const base = new BigNumber(baseFor(amount, tasa));
  const iva = base.times(tasa).decimalPlaces(6, BigNumber.ROUND_HALF_UP).decimalPlaces(2, BigNumber.ROUND_HALF_UP);
  const subTotal = base.decimalPlaces(2, BigNumber.ROUND_HALF_UP);
  return { subTotal: subTotal.toFixed(2), total: subTotal.plus(iva).toFixed(2) };
}
