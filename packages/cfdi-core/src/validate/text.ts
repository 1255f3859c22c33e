/**
 * Text rules shared by the validators and the cadena original.
 *
 * XML 1.0 whitespace is exactly space, tab, CR and LF; XPath `normalize-space` (what the SAT XSLT uses)
 * and XSD `whiteSpace="collapse"` treat only those four as whitespace. JavaScript's `trim()` and `\s`
 * also strip NBSP and other Unicode spaces, which would make our cadena differ from the SAT's, so they
 * are never used on SAT text.
 */

const XML_WS_RUN = /[ \t\r\n]+/g;
const XML_WS_EDGES = /^[ \t\r\n]+|[ \t\r\n]+$/g;

/** XPath 1.0 `normalize-space`: strip XML whitespace at both ends, collapse inner runs to one space. */
export function normalizeSpace(value: string): string {
  // Almost every value is already normal; a scan is far cheaper than two replacements.
  return isNormal(value) ? value : value.replace(XML_WS_EDGES, '').replace(XML_WS_RUN, ' ');
}

/** True when `value` has no tab/CR/LF, no leading or trailing space and no double space. */
function isNormal(value: string): boolean {
  const n = value.length;
  if (n === 0) return true;
  if (value.charCodeAt(0) === 32 || value.charCodeAt(n - 1) === 32) return false;
  let previousSpace = false;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c === 9 || c === 10 || c === 13) return false;
    const space = c === 32;
    if (space && previousSpace) return false;
    previousSpace = space;
  }
  return true;
}

// Characters XML 1.0 cannot carry at all (not even as character references): C0 controls other than
// tab/LF/CR, lone surrogates, U+FFFE and U+FFFF.
const NOT_XML_CHAR =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;

/** Whether `value` contains a character that cannot appear in an XML 1.0 document. */
export function hasNonXmlChar(value: string): boolean {
  return NOT_XML_CHAR.test(value);
}

/** Length in Unicode code points, as XSD length facets count. */
export function codePointLength(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

// What prints as nothing: Unicode white space (NBSP, the ideographic space…), format characters
// (zero-width space and joiners, the BOM, the soft hyphen…) and the Hangul and Braille fillers.
const INVISIBLE = /^[\p{White_Space}\p{Cf}\u115F\u1160\u3164\uFFA0\u2800]*$/u;

/**
 * Whether `value` has no visible character: empty, or only white space and invisible characters — a
 * name or description that would print blank, refused like an empty one.
 */
export function isBlank(value: string): boolean {
  return INVISIBLE.test(value);
}
