/**
 * A Descarga Masiva request's parameters, read from its signed `solicitud` element as the SAT's
 * v1.5 services take them (SolicitaDescargaEmitidos, SolicitaDescargaRecibidos,
 * SolicitaDescargaFolio), and which documents of the SAT's view they select.
 */
import { DescargaRefusal, NS } from './ws-security.ts';
import type { SatDocument } from './sat-view.ts';

export type Operation = 'SolicitaDescargaEmitidos' | 'SolicitaDescargaRecibidos' | 'SolicitaDescargaFolio';
export const OPERATIONS: readonly Operation[] = [
  'SolicitaDescargaEmitidos',
  'SolicitaDescargaRecibidos',
  'SolicitaDescargaFolio',
];

export interface Query {
  operation: Operation;
  rfcSolicitante: string;
  /** CFDI (the XML files) or Metadata (one text file of rows). */
  kind: 'CFDI' | 'Metadata';
  /** Emission date bounds, as the CFDI's Fecha is written (local time), both included. */
  from?: string;
  to?: string;
  rfcEmisor?: string;
  rfcReceptores: string[];
  tipo?: string;
  estado: 'Todos' | 'Vigente' | 'Cancelado';
  folio?: string;
  /** The parameters as one string: identical requests have the same key. */
  key: string;
}

const FECHA = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
const UUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/i;
const malformed = (why: string) => new DescargaRefusal('301', `XML Mal Formado: ${why}`);

/** Reads and checks a query; a parameter the SAT would refuse is a 301 naming it. */
export function readQuery(operation: Operation, request: Element): Query {
  const a = (name: string) => request.getAttribute(name) ?? '';
  const rfcSolicitante = a('RfcSolicitante').toUpperCase();
  const receptores: string[] = [];
  for (let n = request.firstChild; n; n = n.nextSibling) {
    const e = n as Element;
    if (e.nodeType === 1 && e.localName === 'RfcReceptores' && e.namespaceURI === NS.des) {
      for (let r = e.firstChild; r; r = r.nextSibling) {
        if (r.nodeType === 1) receptores.push((r.textContent ?? '').trim().toUpperCase());
      }
    }
  }
  if (operation === 'SolicitaDescargaFolio') {
    const folio = a('Folio').toUpperCase();
    if (!UUID.test(folio)) throw malformed('Folio');
    return {
      operation,
      rfcSolicitante,
      kind: 'CFDI',
      rfcReceptores: [],
      estado: 'Todos',
      folio,
      key: keyOf(operation, request),
    };
  }
  const kind = a('TipoSolicitud');
  if (kind !== 'CFDI' && kind !== 'Metadata') throw malformed('TipoSolicitud');
  const from = a('FechaInicial');
  const to = a('FechaFinal');
  if (!FECHA.test(from) || !FECHA.test(to) || from >= to) throw malformed('FechaInicial/FechaFinal');
  const estado = (a('EstadoComprobante') || 'Todos') as Query['estado'];
  if (!['Todos', 'Vigente', 'Cancelado'].includes(estado)) throw malformed('EstadoComprobante');
  const tipo = a('TipoComprobante') || undefined;
  if (tipo !== undefined && !['I', 'E', 'T', 'N', 'P'].includes(tipo)) throw malformed('TipoComprobante');
  const query: Query = {
    operation,
    rfcSolicitante,
    kind,
    from,
    to,
    rfcReceptores: receptores,
    estado,
    key: keyOf(operation, request),
  };
  if (tipo) query.tipo = tipo;
  if (operation === 'SolicitaDescargaEmitidos') {
    if (a('RfcEmisor').toUpperCase() !== rfcSolicitante) throw new DescargaRefusal('5001', 'Tercero no autorizado');
    if (receptores.length > 5) throw malformed('RfcReceptores (5 at most)');
    query.rfcEmisor = rfcSolicitante;
  } else {
    if (a('RfcReceptor').toUpperCase() !== rfcSolicitante) throw new DescargaRefusal('5001', 'Tercero no autorizado');
    if (kind === 'CFDI' && estado !== 'Vigente') throw malformed('EstadoComprobante (received XML: Vigente only)');
    if (a('RfcEmisor')) query.rfcEmisor = a('RfcEmisor').toUpperCase();
    query.rfcReceptores = [rfcSolicitante];
  }
  return query;
}

function keyOf(operation: Operation, request: Element): string {
  const attributes: string[] = [];
  for (let i = 0; i < request.attributes.length; i++) {
    const at = request.attributes.item(i);
    if (at && !at.name.startsWith('xmlns')) attributes.push(`${at.name}=${at.value}`);
  }
  const receptores: string[] = [];
  for (const r of Array.from(request.getElementsByTagNameNS(NS.des, 'RfcReceptor')))
    receptores.push(r.textContent ?? '');
  return [operation, ...attributes.sort(), ...receptores.sort()].join('|');
}

/** The documents of the SAT's view a query selects. */
export function selected(query: Query, documents: readonly SatDocument[]): SatDocument[] {
  if (query.folio) {
    const who = query.rfcSolicitante;
    return documents.filter((d) => d.uuid === query.folio && (d.rfcEmisor === who || d.rfcReceptor === who));
  }
  return documents.filter((d) => {
    const fecha = d.fechaEmision;
    if (query.from !== undefined && fecha < query.from) return false;
    if (query.to !== undefined && fecha > query.to) return false;
    if (query.rfcEmisor && d.rfcEmisor !== query.rfcEmisor) return false;
    if (query.rfcReceptores.length > 0 && !query.rfcReceptores.includes(d.rfcReceptor)) return false;
    if (query.tipo && d.efecto !== query.tipo) return false;
    if (query.estado === 'Vigente' && d.cancelled) return false;
    if (query.estado === 'Cancelado' && !d.cancelled) return false;
    return true;
  });
}
