import { BigNumber } from 'bignumber.js';
import {
  formatFecha,
  NOMBRE_PUBLICO_GENERAL,
  RFC_PUBLICO_GENERAL,
  rfcKind,
  usoCfdiFor,
  timeZoneForCodigoPostal,
  type InvoiceRequestInput,
} from '@timbra/cfdi-core';

/** The customer's fiscal data, as a payment carries it (Stripe metadata, MP metadata, REST body). */
export interface ReceptorInput {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  codigoPostal: string;
  usoCfdi: string;
}

export interface InvoiceSettings {
  emisor: { rfc: string; nombre: string; regimenFiscal: string; lugarExpedicion: string };
  concepto: { claveProdServ: string; claveUnidad: string; descripcion: string };
  ivaTasa: string;
  periodicidad: string;
}

export interface PaymentFacts {
  provider: string;
  externalId: string;
  /** Total paid, IVA included, as a decimal string. */
  amount: string;
  currency: string;
  occurredAt: Date;
  receptor: ReceptorInput | null;
  description: string | null;
  formaPago: string;
  /** `installments`: a PPD Ingreso (FormaPago 99), paid later with Pagos. Default `single` (PUE). */
  paymentTerms?: 'single' | 'installments';
}

/**
 * The Ingreso request for a payment. The amount received includes IVA, so the concepto's base is
 * chosen among round(amount / (1 + tasa)) and its neighbours ±0.01 so that base + IVA equals the
 * amount exactly (when no neighbour does, the closest is used and the invoice total may differ by a
 * cent). Without receptor data the CFDI goes to público en general, with InformacionGlobal for the
 * month of the payment. Fecha is `issuedAt` — when the document is frozen — not the payment's time.
 */
export function buildIngresoRequest(
  facts: PaymentFacts,
  serie: string,
  folio: number,
  settings: InvoiceSettings,
  issuedAt: Date,
): InvoiceRequestInput {
  const base = baseFor(facts.amount, settings.ivaTasa);
  const zone = timeZoneForCodigoPostal(settings.emisor.lugarExpedicion);
  const local = formatFecha(facts.occurredAt, zone);
  const receptor = receptorFor(facts.receptor, settings);
  return {
    tipoDeComprobante: 'I',
    // The business event, not our row id: the stamp key must be the same for every retry.
    sourceId: `${facts.provider}:${facts.externalId}`,
    issuedAt: issuedAt.toISOString(),
    serie,
    folio: String(folio),
    lugarExpedicion: settings.emisor.lugarExpedicion,
    moneda: facts.currency,
    ...(facts.paymentTerms === 'installments'
      ? { formaPago: '99', metodoPago: 'PPD' }
      : { formaPago: facts.formaPago, metodoPago: 'PUE' }),
    emisor: { rfc: settings.emisor.rfc, nombre: settings.emisor.nombre, regimenFiscal: settings.emisor.regimenFiscal },
    receptor,
    ...(facts.receptor
      ? {}
      : {
          informacionGlobal: {
            periodicidad: settings.periodicidad,
            meses: mesesFor(settings.periodicidad, local),
            año: Number(local.slice(0, 4)),
          },
        }),
    conceptos: [
      {
        claveProdServ: settings.concepto.claveProdServ,
        noIdentificacion: facts.externalId.slice(0, 100),
        cantidad: '1',
        claveUnidad: settings.concepto.claveUnidad,
        descripcion: facts.description?.trim() || settings.concepto.descripcion,
        valorUnitario: base,
        objetoImp: '02',
        traslados: [{ impuesto: '002', tipoFactor: 'Tasa', tasaOCuota: settings.ivaTasa }],
      },
    ],
  };
}

/**
 * The CFDI Receptor for a customer's fiscal data, or público en general (RFC XAXX010101000,
 * régimen 616, the emisor's CP, UsoCFDI S01) without it. `usoCfdi`, when given, replaces the
 * customer's own with the first of those uses that c_UsoCFDI allows for the customer's persona and
 * régimen (an Egreso: G02, else S01 — a salaried customer in 605 may not receive G02; a Pago: CP01).
 */
export function receptorFor(
  receptor: ReceptorInput | null,
  settings: InvoiceSettings,
  usoCfdi?: readonly string[],
): InvoiceRequestInput['receptor'] {
  if (!receptor)
    return {
      rfc: RFC_PUBLICO_GENERAL,
      nombre: NOMBRE_PUBLICO_GENERAL,
      domicilioFiscalReceptor: settings.emisor.lugarExpedicion,
      regimenFiscalReceptor: '616',
      usoCFDI: 'S01',
    };
  return {
    rfc: receptor.rfc,
    nombre: receptor.nombre,
    domicilioFiscalReceptor: receptor.codigoPostal,
    regimenFiscalReceptor: receptor.regimenFiscal,
    usoCFDI: usoCfdi === undefined ? receptor.usoCfdi : dependentUsoCfdi(usoCfdi, receptor),
  };
}

/** The first allowed of `preferred` for this customer; when none is (bad data), the first: validation says why. */
function dependentUsoCfdi(preferred: readonly string[], receptor: ReceptorInput): string {
  const kind = rfcKind(receptor.rfc);
  const allowed =
    kind === 'fisica' || kind === 'moral' ? usoCfdiFor(preferred, receptor.regimenFiscal, kind) : undefined;
  return allowed ?? preferred[0]!;
}

/** The 2-decimal base whose base + round(base × tasa) is `amount`, or the closest one. */
export function baseFor(amount: string, tasa: string): string {
  const total = new BigNumber(amount);
  const rate = new BigNumber(tasa);
  const estimate = total.dividedBy(rate.plus(1)).decimalPlaces(2, BigNumber.ROUND_HALF_UP);
  const candidates = [estimate, estimate.minus('0.01'), estimate.plus('0.01')];
  const exact = candidates.find((b) =>
    b.plus(b.times(rate).decimalPlaces(2, BigNumber.ROUND_HALF_UP)).isEqualTo(total),
  );
  return (exact ?? estimate).toFixed(2);
}

/**
 * InformacionGlobal's Meses for the sale's local date: its month (01–12), or for Periodicidad 05
 * (bimestral) its bimester (13 = enero–febrero … 18 = noviembre–diciembre), as c_Meses has them.
 */
export function mesesFor(periodicidad: string, localFecha: string): string {
  const month = Number(localFecha.slice(5, 7));
  return periodicidad === '05' ? String(12 + Math.ceil(month / 2)) : localFecha.slice(5, 7);
}
