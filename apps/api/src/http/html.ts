import { timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';

/** Text as HTML text or an attribute value: the server-rendered pages' one escape. */
export function escapeHtml(value: string | number | null | undefined): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** Two tokens equal, compared in constant time (a form's anti-forgery token against the expected one). */
export function sameToken(given: unknown, expected: string): boolean {
  const a = Buffer.from(typeof given === 'string' ? given : '');
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A cross-site request (a form on another site posting here with the user's credentials or cookie). */
export function crossSite(req: Request): boolean {
  const site = req.get('sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.get('origin');
  if (origin === undefined || origin === 'null') return false;
  try {
    return new URL(origin).host !== req.get('host');
  } catch {
    return true;
  }
}
