/**
 * The ZIP packages Descarga Masiva hands out: a CFDI package holds one `<UUID>.xml` per document,
 * byte for byte as stamped; a metadata package one `<package id>.txt`, rows separated by `~` with
 * the SAT's header, CRLF line ends, dates as `YYYY-MM-DD HH:mm:ss`, Estatus 1 (vigente) or 0.
 */
import JSZip from 'jszip';
import type { SatDocument } from './sat-view.ts';

export const METADATA_HEADER = [
  'Uuid',
  'RfcEmisor',
  'NombreEmisor',
  'RfcReceptor',
  'NombreReceptor',
  'RfcPac',
  'FechaEmision',
  'FechaCertificacionSat',
  'Monto',
  'EfectoComprobante',
  'Estatus',
  'FechaCancelacion',
].join('~');

const sqlTime = (fecha: string) => fecha.replace('T', ' ');

export function metadataRow(d: SatDocument): string {
  return [
    d.uuid,
    d.rfcEmisor,
    d.nombreEmisor,
    d.rfcReceptor,
    d.nombreReceptor,
    d.rfcPac,
    sqlTime(d.fechaEmision),
    sqlTime(d.fechaCertificacion),
    d.total,
    d.efecto,
    d.cancelled ? '0' : '1',
    sqlTime(d.fechaCancelacion),
  ].join('~');
}

/** One package's ZIP bytes. */
export async function buildPackage(kind: 'CFDI' | 'Metadata', packageId: string, documents: readonly SatDocument[]) {
  const zip = new JSZip();
  if (kind === 'CFDI') {
    for (const d of documents) zip.file(`${d.uuid}.xml`, d.xml);
  } else {
    const lines = [METADATA_HEADER, ...documents.map(metadataRow)];
    zip.file(`${packageId}.txt`, `${lines.join('\r\n')}\r\n`);
  }
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}
