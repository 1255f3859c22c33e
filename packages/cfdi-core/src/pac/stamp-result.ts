import { insertTfd, parseStampedCfdi, parseTfd } from '../tfd.ts';
import { serializeElement } from '../xml/serialize-xml.ts';
import { attr, NS } from '../xml/xml-node.ts';
import { PacError, PacErrorCode } from './pac-errors.ts';
import type { StampResult } from './pac-client.ts';

/** The Sello of a frozen CFDI: an attribute of the root, base64 (never escaped). */
export function selloOf(frozenXml: string): string {
  return /<[\w.-]+:Comprobante\b[^>]*?\sSello="([^"]*)"/.exec(frozenXml)?.[1] ?? '';
}

/**
 * The TFD of a stamped CFDI as standalone XML text. Namespace declarations it inherited from the
 * comprobante (`tfd`, `xsi`) are declared on it, so it parses on its own and inserts anywhere.
 */
export function tfdXmlOf(stampedCfdi: string): string {
  // Fast path: cut the (empty) TFD element out of the text instead of parsing the whole CFDI.
  // Attribute values are matched as quoted strings, so a '>' inside Leyenda cannot end the tag.
  const match = TFD_ELEMENT.exec(stampedCfdi);
  if (match) {
    const prefix = match[1] ?? '';
    let fragment = match[0];
    const own = prefix ? `xmlns:${prefix}` : 'xmlns';
    const declarations: string[] = [];
    if (!new RegExp(`\\s${own}\\s*=`).test(fragment)) declarations.push(`${own}="${NS.tfd}"`);
    if (/\sxsi:[\w-]+\s*=/.test(fragment) && !/\sxmlns:xsi\s*=/.test(fragment))
      declarations.push(`xmlns:xsi="${NS.xsi}"`);
    if (declarations.length > 0) {
      const nameEnd = 1 + (prefix ? prefix.length + 1 : 0) + 'TimbreFiscalDigital'.length;
      fragment = `${fragment.slice(0, nameEnd)} ${declarations.join(' ')}${fragment.slice(nameEnd)}`;
    }
    return fragment;
  }
  const { tfdElement } = parseStampedCfdi(stampedCfdi);
  const colon = tfdElement.name.indexOf(':');
  const own = colon < 0 ? 'xmlns' : `xmlns:${tfdElement.name.slice(0, colon)}`;
  const declarations: [string, string][] = [];
  if (attr(tfdElement, own) === undefined) declarations.push([own, NS.tfd]);
  if (tfdElement.attrs.some(([k]) => k.startsWith('xsi:')) && attr(tfdElement, 'xmlns:xsi') === undefined) {
    declarations.push(['xmlns:xsi', NS.xsi]);
  }
  tfdElement.attrs.unshift(...declarations);
  return serializeElement(tfdElement);
}

const TFD_ELEMENT = /<(?:([\w.-]+):)?TimbreFiscalDigital(?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*\/>/;

/**
 * Builds a StampResult from the TFD the PAC returned, checking that it is the stamp of *this*
 * document (its SelloCFD is the frozen Sello) and inserting it into the frozen bytes.
 *
 * @throws PacError PAC_FOREIGN_STAMP (permanent) when the TFD belongs to another document.
 */
export function stampResultFromTfd(
  pac: string,
  frozenXml: string,
  tfdXml: string,
  recovery?: { code: string },
  /** The stamped CFDI as the PAC returned it; when the TFD is of another document, that document. */
  pacCfdi?: string,
): StampResult {
  let tfd;
  try {
    tfd = parseTfd(tfdXml).tfd;
  } catch (cause) {
    throw new PacError({
      outcome: 'ambiguous',
      pacCode: 'BAD_TFD',
      pac,
      message: 'the PAC returned an unreadable TFD',
      cause,
    });
  }
  const sello = selloOf(frozenXml);
  if (tfd.selloCFD !== sello && recovery && pacCfdi) {
    // A recovery of the stamp this key was first used for, which is another document: hand back
    // that document as stamped, flagged, for the caller to record.
    return {
      pac,
      uuid: tfd.uuid.toUpperCase(),
      fechaTimbrado: tfd.fechaTimbrado,
      tfdXml,
      stampedXml: pacCfdi,
      recovered: true,
      recoveryCode: recovery.code,
      sameDocument: false,
    };
  }
  if (tfd.selloCFD !== sello) {
    throw new PacError({
      code: PacErrorCode.ForeignStamp,
      outcome: 'permanent',
      pacCode: recovery?.code ?? 'FOREIGN_TFD',
      pac,
      message: `the PAC returned the stamp ${tfd.uuid} of another document for this idempotency key`,
    });
  }
  let stampedXml: string;
  try {
    stampedXml = insertTfd(frozenXml, tfdXml);
  } catch (cause) {
    throw new PacError({
      outcome: 'permanent',
      pacCode: 'NOT_INSERTABLE',
      pac,
      message: 'cannot insert the TFD',
      cause,
    });
  }
  return {
    pac,
    uuid: tfd.uuid.toUpperCase(),
    fechaTimbrado: tfd.fechaTimbrado,
    tfdXml,
    stampedXml,
    recovered: recovery !== undefined,
    ...(recovery ? { recoveryCode: recovery.code } : {}),
    sameDocument: true,
  };
}
