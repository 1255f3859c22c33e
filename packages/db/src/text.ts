/**
 * What Postgres text and jsonb can hold: not U+0000, not a lone surrogate. One owner for the rule:
 * the API refuses such text at its edges (REST, providers' payloads) and the webhook store keeps a
 * payload that has it with U+FFFD in its place.
 */

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what is looked for
const UNSTORABLE = /\u0000|[\ud800-\udfff]/u;
// eslint-disable-next-line no-control-regex -- as above
const UNSTORABLE_ALL = /\u0000|[\ud800-\udfff]/gu;
/**
 * The same characters as JSON.stringify writes them — as `\u` escapes, the only characters it
 * escapes that way in those ranges — not preceded by an escaped backslash.
 */
const UNSTORABLE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g;

/** Whether a column can store `text`. */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** Whether any string in `value` (keys included) holds what no column can store. */
export function hasUnstorableText(value: unknown): boolean {
  UNSTORABLE_ESCAPE.lastIndex = 0;
  return UNSTORABLE_ESCAPE.test(JSON.stringify(value) ?? '');
}

/** `text` with U+FFFD where a column could not store a character. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE_ALL, '\ufffd');
}

/** `value` as JSON a jsonb column can store (U+FFFD in place of what it cannot). */
export function storableJson(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(UNSTORABLE_ESCAPE, '$1\\ufffd');
}
