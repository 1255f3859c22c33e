import { CfdiError, CfdiErrorCode } from '../errors.ts';
import { normalizeSpace } from '../validate/text.ts';
import { NS, type XmlElement } from '../xml/xml-node.ts';
import { CFDI_TEMPLATES, TFD_TEMPLATES, type Step } from './cadena-spec.ts';

/**
 * A compiled template: appends the fields of one element (and of what it applies templates to) to
 * the cadena. Templates are compiled once from the tables in cadena-spec.ts into closures, so
 * computing a cadena walks the tree without interpreting the tables again.
 */
type Template = (element: XmlElement, out: { s: string }) => void;
/** Compiled templates by namespace, then local name. */
type Templates = Map<string, Map<string, Template>>;

/**
 * The cadena original of a CFDI 4.0 (with Pagos 2.0 when present), computed from its tree exactly as
 * the SAT's `cadenaoriginal_4_0.xslt` computes it: `||` + each field preceded by `|` + `||`, values
 * whitespace-normalised, optional attributes only when present, Sello/Certificado/Addenda never read.
 *
 * @throws CfdiError CFDI_INVALID_XML when the root is not a `cfdi:Comprobante`.
 */
export function cadenaOriginal(comprobante: XmlElement): string {
  if (comprobante.ns !== NS.cfdi || comprobante.local !== 'Comprobante') {
    throw new CfdiError(CfdiErrorCode.InvalidXml, 'not a CFDI 4.0 cfdi:Comprobante');
  }
  return run(comprobante, CFDI);
}

/**
 * The cadena original of a TimbreFiscalDigital 1.1, as `cadenaoriginal_TFD_1_1.xslt` computes it.
 *
 * @throws CfdiError CFDI_INVALID_TFD when the element is not a `tfd:TimbreFiscalDigital`.
 */
export function cadenaOriginalTfd(tfd: XmlElement): string {
  if (tfd.ns !== NS.tfd || tfd.local !== 'TimbreFiscalDigital') {
    throw new CfdiError(CfdiErrorCode.InvalidTfd, 'not a tfd:TimbreFiscalDigital');
  }
  return run(tfd, TFD);
}

function run(root: XmlElement, templates: Templates): string {
  const out = { s: '|' };
  apply(root, templates, out);
  return `${out.s}||`;
}

/** `apply-templates` on one element: its template, or XSLT's built-in rule when it has none. */
function apply(element: XmlElement, templates: Templates, out: { s: string }): void {
  const template = templates.get(element.ns)?.get(element.local);
  if (template) {
    template(element, out);
    return;
  }
  // Built-in template rule: process child nodes, copying text. This is what unknown complements
  // (and the TFD inside a stamped CFDI) contribute: only their text content, not normalised.
  for (const child of element.children) {
    if (child.kind === 'text') out.s += child.text;
    else apply(child, templates, out);
  }
}

function attrValue(element: XmlElement, name: string): string | undefined {
  const attrs = element.attrs;
  for (let i = 0; i < attrs.length; i++) {
    const pair = attrs[i]!;
    if (pair[0] === name) return pair[1];
  }
  return undefined;
}

/** Runs `fn` on each element reached from `from` by a child-axis path, in document order. */
function forEachPath(
  from: XmlElement,
  path: readonly (readonly [string, string])[],
  depth: number,
  fn: Template,
  out: { s: string },
): void {
  const [ns, local] = path[depth]!;
  const last = depth === path.length - 1;
  const children = from.children;
  for (let i = 0; i < children.length; i++) {
    const child = children[i]!;
    if (child.kind !== 'element' || child.local !== local || child.ns !== ns) continue;
    if (last) fn(child, out);
    else forEachPath(child, path, depth + 1, fn, out);
  }
}

function compileSteps(steps: readonly Step[], templates: () => Templates): Template {
  const compiled: Template[] = steps.map((step): Template => {
    if ('r' in step) {
      const name = step.r;
      return (element, out) => {
        out.s += '|' + normalizeSpace(attrValue(element, name) ?? '');
      };
    }
    if ('o' in step) {
      const name = step.o;
      return (element, out) => {
        // XSLT `test="$valor"` on an attribute node-set: true when the attribute exists, even empty.
        const value = attrValue(element, name);
        if (value !== undefined) out.s += '|' + normalizeSpace(value);
      };
    }
    if ('each' in step) {
      const nested = compileSteps(step.steps, templates);
      const path = step.each;
      return (element, out) => forEachPath(element, path, 0, nested, out);
    }
    if ('apply' in step) {
      const path = step.apply;
      // The selected element's name is known here, so its template is resolved once (lazily: it may
      // be compiled after this one) instead of looked up for every match.
      const [ns, local] = path[path.length - 1]!;
      let resolved: Template | undefined;
      const applyTo: Template = (match, out) => {
        resolved ??= templates().get(ns)?.get(local) ?? ((m, o) => apply(m, templates(), o));
        resolved(match, out);
      };
      return (element, out) => forEachPath(element, path, 0, applyTo, out);
    }
    return (element, out) => {
      for (const child of element.children) if (child.kind === 'element') apply(child, templates(), out);
    };
  });
  return (element, out) => {
    for (let i = 0; i < compiled.length; i++) compiled[i]!(element, out);
  };
}

function compile(flat: ReadonlyMap<string, readonly Step[]>): Templates {
  const byNs: Templates = new Map();
  const self = () => byNs;
  for (const [key, steps] of flat) {
    const bar = key.lastIndexOf('|');
    const ns = key.slice(0, bar);
    const locals = byNs.get(ns) ?? new Map<string, Template>();
    locals.set(key.slice(bar + 1), compileSteps(steps, self));
    byNs.set(ns, locals);
  }
  return byNs;
}

const CFDI = compile(CFDI_TEMPLATES);
const TFD = compile(TFD_TEMPLATES);
