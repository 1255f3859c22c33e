import { DEFAULT_TIME_ZONE as SAT_TIME_ZONE, formatFecha } from '@timbra/cfdi-core';
import type { SatRegistry } from './registry.ts';

export interface CancellationPolicy {
  /** Cancelling a CFDI whose Total is above this needs the receptor's acceptance. */
  acceptanceAbove: number;
  /** How long such a request stays "En proceso" before being accepted. */
  acceptDelayMs: number;
}

const UUID_RE = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/i;

/**
 * A cancellation request as the SAT answers it, per UUID: 201 accepted, 202 previously cancelled
 * (or in process), 205 not found (unknown UUID or another emisor's). Request errors (motivo,
 * FolioSustitucion) come back as `{ error }`. A request the receptor rejected may be made again.
 * `rejectBy`: receptor RFCs that will reject it (the instance's `rejectCancellationBy` fault).
 */
export function requestCancellation(
  registry: SatRegistry,
  request: { uuid: string; rfcEmisor: string; motivo: string; folioSustitucion?: string },
  now: number,
  policy: CancellationPolicy,
  rejectBy: readonly string[] = [],
): { code: '201' | '202' | '205' } | { error: string } {
  if (!['01', '02', '03', '04'].includes(request.motivo)) return { error: 'CA1002 - Motivo de cancelación inválido.' };
  if (request.motivo === '01') {
    if (!request.folioSustitucion || !UUID_RE.test(request.folioSustitucion)) {
      return { error: 'CA1003 - El motivo 01 requiere FolioSustitucion.' };
    }
    if (!registry.get(request.folioSustitucion)) return { error: 'CA1004 - El FolioSustitucion no existe.' };
  }
  const record = registry.get(request.uuid);
  if (!record || record.rfcEmisor !== request.rfcEmisor) return { code: '205' };
  const previous = record.cancellation;
  if (previous && !(previous.rejected && now >= previous.decideAt)) return { code: '202' };
  const withAcceptance = Number(record.total) > policy.acceptanceAbove;
  record.cancellation = {
    motivo: request.motivo,
    ...(request.folioSustitucion ? { folioSustitucion: request.folioSustitucion } : {}),
    requestedAt: now,
    withAcceptance,
    decideAt: withAcceptance ? now + policy.acceptDelayMs : now,
    rejected: withAcceptance && rejectBy.includes(record.rfcReceptor),
  };
  return { code: '201' };
}

/** The SAT status of a CFDI (ConsultaCFDIService fields). */
export function statusOf(
  registry: SatRegistry,
  query: { uuid: string; rfcEmisor: string; rfcReceptor: string; total: string },
  now: number,
  policy: CancellationPolicy,
): { codigoEstatus: string; esCancelable: string; estado: string; estatusCancelacion: string } {
  const record = registry.get(query.uuid);
  const matches =
    record &&
    record.rfcEmisor === query.rfcEmisor &&
    record.rfcReceptor === query.rfcReceptor &&
    Number(record.total) === Number(query.total);
  if (!record || !matches) {
    return {
      codigoEstatus: 'N - 602: Comprobante no encontrado.',
      esCancelable: '',
      estado: 'No Encontrado',
      estatusCancelacion: '',
    };
  }
  const withAcceptance = Number(record.total) > policy.acceptanceAbove;
  const base = {
    codigoEstatus: 'S - Comprobante obtenido satisfactoriamente.',
    esCancelable: withAcceptance ? 'Cancelable con aceptación' : 'Cancelable sin aceptación',
  };
  const c = record.cancellation;
  if (!c) return { ...base, estado: 'Vigente', estatusCancelacion: '' };
  if (!c.withAcceptance) return { ...base, estado: 'Cancelado', estatusCancelacion: 'Cancelado sin aceptación' };
  if (now < c.decideAt) return { ...base, estado: 'Vigente', estatusCancelacion: 'En proceso' };
  if (c.rejected) return { ...base, estado: 'Vigente', estatusCancelacion: 'Solicitud rechazada' };
  return { ...base, estado: 'Cancelado', estatusCancelacion: 'Cancelado con aceptación' };
}

/**
 * A minimal acuse de cancelación (the SAT's is signed; the sandbox's only records what was asked).
 * Its Fecha is Mexico City's wall-clock time, as the SAT writes it, not UTC.
 */
export function acuseXml(rfcEmisor: string, uuid: string, code: string, now: Date): string {
  return (
    `<Acuse xmlns="http://cancelacfd.sat.gob.mx" Fecha="${formatFecha(now, SAT_TIME_ZONE)}" RfcEmisor="${rfcEmisor}">` +
    `<Folios><UUID>${uuid.toUpperCase()}</UUID><EstatusUUID>${code}</EstatusUUID></Folios></Acuse>`
  );
}
