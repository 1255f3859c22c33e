/**
 * What the SAT's own record holds at an instant: every CFDI a PAC of the sandbox stamped, once the
 * SAT's lag has passed since its stamp, with its status as the SAT knew it then. Descarga Masiva
 * answers from this view; the PAC's ledger is what it is built from.
 */
import { attr, childElements, DEFAULT_TIME_ZONE, formatFecha, NS, parseXml } from '@timbra/cfdi-core';
import type { SatRegistry, StampRecord } from '../registry.ts';

export interface SatDocument {
  uuid: string;
  rfcEmisor: string;
  nombreEmisor: string;
  rfcReceptor: string;
  nombreReceptor: string;
  rfcPac: string;
  /** The CFDI's Fecha as written (the emisor's local time), `YYYY-MM-DDTHH:mm:ss`. */
  fechaEmision: string;
  /** The TFD's FechaTimbrado as written. */
  fechaCertificacion: string;
  total: string;
  /** TipoDeComprobante: I, E, T, N, P. */
  efecto: string;
  cancelled: boolean;
  /** When the cancellation took effect, Mexico City time (`YYYY-MM-DDTHH:mm:ss`); '' when vigente. */
  fechaCancelacion: string;
  xml: string;
}

type Fields = Omit<SatDocument, 'cancelled' | 'fechaCancelacion'>;
const parsed = new WeakMap<StampRecord, Fields>();

function fieldsOf(record: StampRecord): Fields {
  let fields = parsed.get(record);
  if (!fields) {
    const root = parseXml(record.stampedXml);
    const emisor = childElements(root, NS.cfdi, 'Emisor')[0];
    const receptor = childElements(root, NS.cfdi, 'Receptor')[0];
    const complemento = childElements(root, NS.cfdi, 'Complemento')[0];
    const tfd = complemento ? childElements(complemento, NS.tfd, 'TimbreFiscalDigital')[0] : undefined;
    fields = {
      uuid: record.uuid.toUpperCase(),
      rfcEmisor: record.rfcEmisor,
      nombreEmisor: (emisor && attr(emisor, 'Nombre')) ?? '',
      rfcReceptor: record.rfcReceptor,
      nombreReceptor: (receptor && attr(receptor, 'Nombre')) ?? '',
      rfcPac: (tfd && attr(tfd, 'RfcProvCertif')) ?? '',
      fechaEmision: attr(root, 'Fecha') ?? '',
      fechaCertificacion: record.fechaTimbrado,
      total: record.total,
      efecto: attr(root, 'TipoDeComprobante') ?? '',
      xml: record.stampedXml,
    };
    parsed.set(record, fields);
  }
  return fields;
}

/** When a cancellation took effect (ms), or undefined while it has not (pending, rejected, none). */
function cancelledAt(record: StampRecord): number | undefined {
  const c = record.cancellation;
  if (!c) return undefined;
  if (!c.withAcceptance) return c.requestedAt;
  return c.rejected ? undefined : c.decideAt;
}

/** The SAT's view at `at` (ms): stamps and cancellations at least `lagMs` old. */
export function satDocuments(registry: SatRegistry, at: number, lagMs: number): SatDocument[] {
  const out: SatDocument[] = [];
  for (const record of registry.stamps) {
    if (Date.parse(record.stampedAt) + lagMs > at) continue;
    const cancelled = cancelledAt(record);
    const known = cancelled !== undefined && cancelled + lagMs <= at;
    out.push({
      ...fieldsOf(record),
      cancelled: known,
      fechaCancelacion: known ? formatFecha(new Date(cancelled), DEFAULT_TIME_ZONE) : '',
    });
  }
  return out;
}
