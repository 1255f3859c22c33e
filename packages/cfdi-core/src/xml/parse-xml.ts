import { DOMParser, onErrorStopParsing, type Element as DomElement, type Node as DomNode } from '@xmldom/xmldom';
import { CfdiError, CfdiErrorCode } from '../errors.ts';
import type { XmlElement, XmlNode } from './xml-node.ts';

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;
const CDATA_SECTION_NODE = 4;

/**
 * Parses an XML document into an `XmlElement` tree.
 *
 * Safe against XXE and entity expansion by construction: a document with a DOCTYPE is refused before
 * parsing (a CFDI never has one), so no external entity is fetched and no internal entity expanded.
 * Any well-formedness error (or warning) stops parsing.
 *
 * @throws CfdiError CFDI_INVALID_XML when the text is not well-formed XML or has a DOCTYPE.
 */
export function parseXml(xml: string): XmlElement {
  if (/<!DOCTYPE/i.test(xml)) {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML with a DOCTYPE is not accepted');
  }
  let doc;
  try {
    doc = new DOMParser({ onError: onErrorStopParsing }).parseFromString(xml, 'text/xml');
  } catch (cause) {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML is not well-formed', { cause });
  }
  const root = doc.documentElement;
  if (!root) throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML has no root element');
  return convert(root);
}

function convert(node: DomElement): XmlElement {
  const attrs: [string, string][] = [];
  for (let i = 0; i < node.attributes.length; i++) {
    const a = node.attributes.item(i);
    if (a) attrs.push([a.name, a.value]);
  }
  const children: XmlNode[] = [];
  for (let c: DomNode | null = node.firstChild; c; c = c.nextSibling) {
    if (c.nodeType === ELEMENT_NODE) children.push(convert(c as DomElement));
    else if (c.nodeType === TEXT_NODE || c.nodeType === CDATA_SECTION_NODE)
      children.push({ kind: 'text', text: c.nodeValue ?? '' });
  }
  return {
    kind: 'element',
    ns: node.namespaceURI ?? '',
    name: node.nodeName,
    local: node.localName ?? node.nodeName,
    attrs,
    children,
  };
}
