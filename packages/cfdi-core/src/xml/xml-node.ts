/**
 * A minimal, ordered XML tree shared by the builder (which produces it), the serializer and the
 * cadena original (which both read it), and the parser (which turns received XML into it). Attribute
 * order is significant: it is the order the document is written in.
 */
export interface XmlElement {
  kind: 'element';
  /** Namespace URI of the element. */
  ns: string;
  /** Qualified name as written (`cfdi:Concepto`). */
  name: string;
  /** Local name (`Concepto`). */
  local: string;
  attrs: [string, string][];
  children: XmlNode[];
}

export interface XmlText {
  kind: 'text';
  text: string;
}

export type XmlNode = XmlElement | XmlText;

/** Namespaces of the documents Timbra reads and writes. */
export const NS = {
  cfdi: 'http://www.sat.gob.mx/cfd/4',
  xsi: 'http://www.w3.org/2001/XMLSchema-instance',
  pago20: 'http://www.sat.gob.mx/Pagos20',
  tfd: 'http://www.sat.gob.mx/TimbreFiscalDigital',
} as const;

/** schemaLocation pairs as the SAT publishes them. */
export const SCHEMA_LOCATION = {
  cfdi: 'http://www.sat.gob.mx/cfd/4 http://www.sat.gob.mx/sitio_internet/cfd/4/cfdv40.xsd',
  pago20: 'http://www.sat.gob.mx/Pagos20 http://www.sat.gob.mx/sitio_internet/cfd/Pagos/Pagos20.xsd',
  tfd: 'http://www.sat.gob.mx/TimbreFiscalDigital http://www.sat.gob.mx/sitio_internet/cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd',
} as const;

/** Builds an element; `attrs` entries whose value is undefined are left out (optional attributes). */
export function el(
  ns: string,
  name: string,
  attrs: readonly (readonly [string, string | undefined])[],
  children: XmlNode[] = [],
): XmlElement {
  const colon = name.indexOf(':');
  const kept: [string, string][] = [];
  for (const [k, v] of attrs) if (v !== undefined) kept.push([k, v]);
  return { kind: 'element', ns, name, local: colon < 0 ? name : name.slice(colon + 1), attrs: kept, children };
}

/** The value of an attribute, or undefined when absent. */
export function attr(element: XmlElement, name: string): string | undefined {
  for (const [k, v] of element.attrs) if (k === name) return v;
  return undefined;
}

/** Sets (replacing or appending) an attribute in place. */
export function setAttr(element: XmlElement, name: string, value: string): void {
  for (const pair of element.attrs) {
    if (pair[0] === name) {
      pair[1] = value;
      return;
    }
  }
  element.attrs.push([name, value]);
}

/** Child elements with the given namespace and local name, in document order. */
export function childElements(element: XmlElement, ns: string, local: string): XmlElement[] {
  const out: XmlElement[] = [];
  for (const c of element.children) if (c.kind === 'element' && c.ns === ns && c.local === local) out.push(c);
  return out;
}
