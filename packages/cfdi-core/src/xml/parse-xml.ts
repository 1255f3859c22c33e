import { SaxesParser, type SaxesTagNS } from 'saxes';
import { CfdiError, CfdiErrorCode } from '../errors.ts';
import type { XmlElement } from './xml-node.ts';

/**
 * Parses an XML document into an `XmlElement` tree with saxes (a conforming, namespace-aware XML 1.0
 * parser that never fetches anything).
 *
 * Safe against XXE and entity expansion by construction: a document with a DOCTYPE is refused before
 * parsing (a CFDI never has one), so no external entity is fetched and no internal entity expanded.
 * Any well-formedness error stops parsing.
 *
 * @throws CfdiError CFDI_INVALID_XML when the text is not well-formed XML or has a DOCTYPE.
 */
export function parseXml(xml: string): XmlElement {
  if (/<!DOCTYPE/i.test(xml)) {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML with a DOCTYPE is not accepted');
  }
  const parser = new SaxesParser({ xmlns: true, position: false });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  parser.on('opentag', (tag: SaxesTagNS) => {
    const attrs: [string, string][] = [];
    for (const name in tag.attributes) {
      const a = tag.attributes[name];
      if (a) attrs.push([a.name, a.value]);
    }
    const element: XmlElement = { kind: 'element', ns: tag.uri, name: tag.name, local: tag.local, attrs, children: [] };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(element);
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  const onText = (text: string) => {
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push({ kind: 'text', text });
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  try {
    parser.write(xml).close();
  } catch (cause) {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML is not well-formed', { cause });
  }
  if (!root) throw new CfdiError(CfdiErrorCode.InvalidXml, 'XML has no root element');
  return root;
}
