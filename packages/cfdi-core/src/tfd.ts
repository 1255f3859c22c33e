import type { KeyLike } from 'node:crypto';
import { cadenaOriginal, cadenaOriginalTfd } from './cadena/cadena-original.ts';
import { verificarSello } from './csd/sello.ts';
import { CfdiError, CfdiErrorCode } from './errors.ts';
import { parseXml } from './xml/parse-xml.ts';
import { attr, childElements, NS, type XmlElement } from './xml/xml-node.ts';

/** The fields of a TimbreFiscalDigital 1.1. */
export interface Tfd {
  version: string;
  uuid: string;
  fechaTimbrado: string;
  rfcProvCertif: string;
  leyenda?: string;
  selloCFD: string;
  noCertificadoSAT: string;
  selloSAT: string;
}

/** A stamped CFDI read back: its own cadena and sello, and its TFD. */
export interface StampedCfdi {
  comprobante: XmlElement;
  cadenaOriginal: string;
  sello: string;
  noCertificado: string;
  tfd: Tfd;
  tfdElement: XmlElement;
  tfdCadenaOriginal: string;
}

/**
 * Reads a TimbreFiscalDigital element's fields.
 *
 * @throws CfdiError CFDI_INVALID_TFD when it is not a TFD 1.1 or a required field is missing.
 */
export function readTfd(element: XmlElement): Tfd {
  if (element.ns !== NS.tfd || element.local !== 'TimbreFiscalDigital') {
    throw new CfdiError(CfdiErrorCode.InvalidTfd, 'not a tfd:TimbreFiscalDigital');
  }
  const get = (name: string): string => {
    const value = attr(element, name);
    if (value === undefined || value === '') throw new CfdiError(CfdiErrorCode.InvalidTfd, `TFD without ${name}`);
    return value;
  };
  const version = get('Version');
  if (version !== '1.1') throw new CfdiError(CfdiErrorCode.InvalidTfd, `TFD version ${version} is not 1.1`);
  const leyenda = attr(element, 'Leyenda');
  return {
    version,
    uuid: get('UUID'),
    fechaTimbrado: get('FechaTimbrado'),
    rfcProvCertif: get('RfcProvCertif'),
    ...(leyenda !== undefined ? { leyenda } : {}),
    selloCFD: get('SelloCFD'),
    noCertificadoSAT: get('NoCertificadoSAT'),
    selloSAT: get('SelloSAT'),
  };
}

/** Parses a standalone TimbreFiscalDigital XML fragment (as SW returns in `data.tfd`). */
export function parseTfd(xml: string): { tfd: Tfd; element: XmlElement; cadenaOriginal: string } {
  const element = parseXml(xml);
  return { tfd: readTfd(element), element, cadenaOriginal: cadenaOriginalTfd(element) };
}

/**
 * Parses a stamped CFDI 4.0: the comprobante's cadena and sello, and the TFD inside its Complemento.
 *
 * @throws CfdiError CFDI_INVALID_XML (not a CFDI 4.0), CFDI_INVALID_TFD (no or bad TFD).
 */
export function parseStampedCfdi(xml: string): StampedCfdi {
  const comprobante = parseXml(xml);
  const cadena = cadenaOriginal(comprobante);
  const tfdElement = childElements(comprobante, NS.cfdi, 'Complemento')
    .flatMap((c) => childElements(c, NS.tfd, 'TimbreFiscalDigital'))
    .at(0);
  if (!tfdElement) throw new CfdiError(CfdiErrorCode.InvalidTfd, 'the CFDI has no TimbreFiscalDigital');
  return {
    comprobante,
    cadenaOriginal: cadena,
    sello: attr(comprobante, 'Sello') ?? '',
    noCertificado: attr(comprobante, 'NoCertificado') ?? '',
    tfd: readTfd(tfdElement),
    tfdElement,
    tfdCadenaOriginal: cadenaOriginalTfd(tfdElement),
  };
}

/** Verifies a TFD's SelloSAT with the PAC's (or SAT's) certificate. */
export function verifyTfd(tfdElement: XmlElement, pacCertificate: KeyLike): boolean {
  const tfd = readTfd(tfdElement);
  return verificarSello(cadenaOriginalTfd(tfdElement), tfd.selloSAT, pacCertificate);
}

/**
 * Inserts a TFD into a frozen CFDI by text, leaving every other byte as it was (so the Sello, which
 * covers the frozen document, still verifies): into an existing `cfdi:Complemento`, or as a new one
 * right before `cfdi:Addenda` or the closing `cfdi:Comprobante` tag, as Anexo 20 orders it.
 *
 * @param frozenXml the frozen comprobante, as stored.
 * @param tfdXml a `tfd:TimbreFiscalDigital` element (no XML declaration), with its namespace declared.
 * @throws CfdiError CFDI_INVALID_XML when the document already has a TFD or is not a comprobante.
 */
export function insertTfd(frozenXml: string, tfdXml: string): string {
  const fragment = tfdXml.replace(/^<\?xml[^>]*\?>\s*/, '');
  // Markup can be told from text by its '<': inside attribute values and text it is always escaped.
  if (/<[\w.-]+:TimbreFiscalDigital[\s/>]/.test(frozenXml)) {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'the CFDI already contains a TimbreFiscalDigital');
  }
  const prefix = /<([A-Za-z_][\w.-]*):Comprobante[\s>]/.exec(frozenXml)?.[1];
  if (prefix === undefined) throw new CfdiError(CfdiErrorCode.InvalidXml, 'not a cfdi:Comprobante');
  const closeComplemento = `</${prefix}:Complemento>`;
  const at = frozenXml.lastIndexOf(closeComplemento);
  if (at >= 0) return frozenXml.slice(0, at) + fragment + frozenXml.slice(at);
  const selfClosing = new RegExp(`<${prefix}:Complemento\\s*/>`).exec(frozenXml);
  if (selfClosing) {
    const wrapped = `<${prefix}:Complemento>${fragment}${closeComplemento}`;
    return frozenXml.slice(0, selfClosing.index) + wrapped + frozenXml.slice(selfClosing.index + selfClosing[0].length);
  }
  const addenda = frozenXml.indexOf(`<${prefix}:Addenda`);
  const end = addenda >= 0 ? addenda : frozenXml.lastIndexOf(`</${prefix}:Comprobante>`);
  if (end < 0) throw new CfdiError(CfdiErrorCode.InvalidXml, 'not a cfdi:Comprobante');
  return `${frozenXml.slice(0, end)}<${prefix}:Complemento>${fragment}${closeComplemento}${frozenXml.slice(end)}`;
}

/**
 * An invoice's stamped CFDI: the frozen bytes with the TFD inserted (`insertTfd`), exactly what the
 * stamp was checked against, so the stamped bytes are not stored a second time (`frozen_xml` and
 * `tfd_xml` are kept, `stamped_xml` only for documents stamped before it was dropped: those bytes
 * win). Null until stamped.
 */
export function stampedXmlOf(invoice: {
  frozenXml: string | null;
  tfdXml: string | null;
  stampedXml?: string | null;
}): string | null {
  if (invoice.stampedXml) return invoice.stampedXml;
  if (!invoice.frozenXml || !invoice.tfdXml) return null;
  return insertTfd(invoice.frozenXml, invoice.tfdXml);
}
