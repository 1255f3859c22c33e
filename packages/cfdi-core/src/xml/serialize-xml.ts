import type { XmlElement } from './xml-node.ts';

/**
 * Serialises a tree as UTF-8 XML text: an XML declaration, no pretty-printing, attributes in tree
 * order, empty elements self-closed. A pure function of the tree, so the same tree always gives the
 * same bytes.
 *
 * Escaping follows Canonical XML: in attribute values `& < > "` and TAB, LF, CR are written as
 * references, so a parser reads back exactly the string we sealed (a literal LF in an attribute
 * would come back as a space). Names come from the builder, never from input.
 *
 * Why not xmlbuilder2 (the design card's choice; ARCHITECTURE.md has the evidence): it writes
 * entity-like text such as "&amp;" unescaped and TAB, LF, CR in attributes raw, so a conformant parser
 * — the PAC's — reads back another string than the one sealed; and it costs ~150–270 µs a document,
 * more than the RSA signature. The tests read this serialiser's output back with saxes (parse-xml.ts)
 * and with SaxonJS (the cadena oracle): two independent parsers.
 */
export function serializeXml(root: XmlElement): string {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  write(root, out);
  return out.join('');
}

/** Serialises one element (no XML declaration), e.g. a TFD to insert into another document. */
export function serializeElement(element: XmlElement): string {
  const out: string[] = [];
  write(element, out);
  return out.join('');
}

function write(element: XmlElement, out: string[]): void {
  out.push('<', element.name);
  for (const [name, value] of element.attrs) out.push(' ', name, '="', escapeAttr(value), '"');
  if (element.children.length === 0) {
    out.push('/>');
    return;
  }
  out.push('>');
  for (const child of element.children) {
    if (child.kind === 'element') write(child, out);
    else out.push(escapeText(child.text));
  }
  out.push('</', element.name, '>');
}

const ATTR_SPECIAL = /[&<>"\t\n\r]/;
const ATTR_SPECIAL_ALL = /[&<>"\t\n\r]/g;
const TEXT_SPECIAL = /[&<>\r]/;
const TEXT_SPECIAL_ALL = /[&<>\r]/g;
const REFERENCES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};
const reference = (c: string): string => REFERENCES[c] ?? c;

function escapeAttr(value: string): string {
  return ATTR_SPECIAL.test(value) ? value.replace(ATTR_SPECIAL_ALL, reference) : value;
}

function escapeText(value: string): string {
  return TEXT_SPECIAL.test(value) ? value.replace(TEXT_SPECIAL_ALL, reference) : value;
}
