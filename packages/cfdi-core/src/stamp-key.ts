import { createHash } from 'node:crypto';

/** Kinds of document a stamp key can identify (TipoDeComprobante). */
export type StampKind = 'I' | 'E' | 'P';

/**
 * The stamp key of a document: derived from the business event, never random, so every retry of the
 * same event names the same document.
 *
 * `<kind>-<sha256(emisorRfc | kind | sourceId) in hex>`: 66 characters of `[A-Z0-9a-f-]`. Safe as a
 * BullMQ jobId (never an integer, no `:`) and as SW's `customid` (≤ 100 characters).
 */
export function stampKeyFor(emisorRfc: string, kind: StampKind, sourceId: string): string {
  const digest = createHash('sha256').update(`${emisorRfc}|${kind}|${sourceId}`, 'utf8').digest('hex');
  return `${kind}-${digest}`;
}

/**
 * A document's source as its organization's books name it: a test organization's (a live one's
 * twin, for its test keys) apart from the live one's, so that the same sale made in test and in live
 * has two stamp keys — two queue jobs, two PAC customids — never one. Every builder of a sourceId
 * that may repeat across the two (a provider's payment, refund or installment) passes it here.
 */
export function sourceIdIn(emisor: { test?: boolean | undefined }, sourceId: string): string {
  return emisor.test ? `test:${sourceId}` : sourceId;
}
