import type { NextFunction, Request, Response } from 'express';
import { hasNonXmlChar } from '@timbra/cfdi-core';
import { ApiError } from './errors.ts';

/** At most this many fields are named in one refusal (a hostile body could have thousands). */
const MAX_NAMED = 20;

/**
 * Refuses a request whose query string or JSON body holds a character that Postgres cannot store
 * (U+0000, a lone surrogate) or an XML 1.0 document cannot carry (other C0 controls, U+FFFE/U+FFFF):
 * 400 `invalid_characters`, naming each field. Checked once at the edge, before any route reads its
 * input, so no filter, id or body field can reach a query or a CFDI with one.
 */
export function refuseUnstorableInput(req: Request, _res: Response, next: NextFunction): void {
  const found: { path: string; message: string }[] = [];
  walk(req.query, 'query', found);
  if (req.body !== undefined && !Buffer.isBuffer(req.body)) walk(req.body, 'body', found);
  next(found.length === 0 ? undefined : new ApiError('invalid_characters', undefined, found.slice(0, MAX_NAMED)));
}

function walk(value: unknown, path: string, found: { path: string; message: string }[]): void {
  if (found.length >= MAX_NAMED) return;
  if (typeof value === 'string') {
    if (hasNonXmlChar(value))
      found.push({ path, message: 'holds U+0000, a control character or a lone surrogate: remove it' });
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, item] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    // A key can carry the character too (`?a%00=1`, `{"a\u0000": 1}`): named as the key.
    if (hasNonXmlChar(key))
      found.push({
        path: `${path}.${JSON.stringify(key)}`,
        message: 'a name with U+0000, a control character or a lone surrogate',
      });
    walk(item, at, found);
  }
}
