import { parseXml } from '../xml/parse-xml.ts';
import type { XmlElement } from '../xml/xml-node.ts';

/** Escapes text for an XML element or attribute value. */
export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A SOAP 1.1 envelope around one operation element; `children` are already-escaped XML fragments. */
export function soapEnvelope(operation: { prefix: string; ns: string; name: string }, children: string): string {
  const { prefix, ns, name } = operation;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>' +
    `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:${prefix}="${escapeXml(ns)}">` +
    `<soapenv:Header/><soapenv:Body><${prefix}:${name}>${children}</${prefix}:${name}></soapenv:Body></soapenv:Envelope>`
  );
}

/** `<prefix:name>escaped text</prefix:name>` */
export function textElement(prefix: string, name: string, text: string): string {
  return `<${prefix}:${name}>${escapeXml(text)}</${prefix}:${name}>`;
}

/** Parses a SOAP response (XXE-safe) and returns its Body's first element. */
export function soapBody(xml: string): XmlElement {
  const envelope = parseXml(xml);
  const body = envelope.children.find((c): c is XmlElement => c.kind === 'element' && c.local === 'Body');
  const first = body?.children.find((c): c is XmlElement => c.kind === 'element');
  if (!first) throw new Error('SOAP response without a Body element');
  return first;
}

/** First descendant element with this local name (namespaces vary between servers), depth-first. */
export function findElement(root: XmlElement, local: string): XmlElement | undefined {
  for (const child of root.children) {
    if (child.kind !== 'element') continue;
    if (child.local === local) return child;
    const found = findElement(child, local);
    if (found) return found;
  }
  return undefined;
}

/** All descendant elements with this local name, in document order. */
export function findElements(root: XmlElement, local: string, out: XmlElement[] = []): XmlElement[] {
  for (const child of root.children) {
    if (child.kind !== 'element') continue;
    if (child.local === local) out.push(child);
    findElements(child, local, out);
  }
  return out;
}

/** Concatenated text content of an element. */
export function textOf(element: XmlElement | undefined): string {
  if (!element) return '';
  let text = '';
  for (const child of element.children) text += child.kind === 'text' ? child.text : textOf(child);
  return text;
}
