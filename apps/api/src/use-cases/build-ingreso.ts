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
 * chosen (baseFor) so that the CFDI's Total is exactly the amount. Without receptor data the CFDI goes to público en general, with InformacionGlobal for the
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

/**
 * The concepto's ValorUnitario (= its Base, cantidad 1) for money received IVA included, chosen so
 * that the CFDI's Total is exactly `amount`: SubTotal = round2(v) and the IVA = round2(round6(v ×
 * tasa)) add up to it (cfdi-core computes a concepto whose ValorUnitario is finer than the currency at
 * 6 decimals, which Anexo 20 allows, and rounds the totals at the end).
 *
 * A 2-decimal value is used when one works (the simpler document); otherwise a 6-decimal one: for
 * SubTotal s and IVA i = amount − s, any v in [s − 0.005, s + 0.005) ∩ [(i − 0.005) / tasa,
 * (i + 0.005) / tasa) does, and for the s nearest amount / (1 + tasa) that intersection is never
 * empty (it is 0.01 / tasa ≥ 0.0625 wide for tasa ≤ 0.16). Property-tested for every tasa Timbra
 * supports (test/exact-totals.test.ts).
 */
export function baseFor(amount: string, tasa: string): string {
  const total = new BigNumber(amount);
  const rate = new BigNumber(tasa);
  if (rate.isZero()) return total.toFixed(2);
  const round2 = (x: BigNumber) => x.decimalPlaces(2, BigNumber.ROUND_HALF_UP);
  const adds = (v: BigNumber) =>
    round2(v)
      .plus(round2(v.times(rate).decimalPlaces(6, BigNumber.ROUND_HALF_UP)))
      .isEqualTo(total);
  const estimate = round2(total.dividedBy(rate.plus(1)));
  for (const s of [estimate, estimate.minus('0.01'), estimate.plus('0.01')]) if (adds(s)) return s.toFixed(2);
  const half = new BigNumber('0.005');
  for (const s of [estimate, estimate.minus('0.01'), estimate.plus('0.01')]) {
    const i = total.minus(s);
    const low = BigNumber.max(s.minus(half), i.minus(half).dividedBy(rate));
    const high = BigNumber.min(s.plus(half), i.plus(half).dividedBy(rate));
    if (!low.isLessThan(high)) continue;
    const v = low.plus(high).dividedBy(2).decimalPlaces(6, BigNumber.ROUND_HALF_UP);
    if (adds(v)) return v.toFixed(6);
  }
  return estimate.toFixed(2); // unreachable for the supported rates (see above); the closest 2-decimal base
}

/**
 * InformacionGlobal's Meses for the sale's local date: its month (01–12), or for Periodicidad 05
 * (bimestral) its bimester (13 = enero–febrero … 18 = noviembre–diciembre), as c_Meses has them.
 */
export function mesesFor(periodicidad: string, localFecha: string): string {
  const month = Number(localFecha.slice(5, 7));
  return periodicidad === '05' ? String(12 + Math.ceil(month / 2)) : localFecha.slice(5, 7);
}
