/**
 * How every list and every body is read: `limit` and `cursor` (newest first, an opaque cursor over
 * createdAt and id), only known query parameters, a page's answer, and a body's validation errors.
 */
import type { Request } from 'express';
import type { z } from 'zod';
import { isUuid, metadataKeyProblems, metadataValueProblems, METADATA_LIMITS, type Metadata } from '@timbra/db';
import { ApiError } from './errors.ts';

/** 422 validation_failed naming every field the schema refused. */
export function validation(error: z.ZodError): ApiError {
  return new ApiError(
    'validation_failed',
    undefined,
    error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
  );
}

/**
 * 400 `unknown_parameter` unless every query parameter of `req` is one of `allowed`; `metadata`
 * allows each `metadata[key]`.
 */
export function onlyParams(req: Request, allowed: readonly string[]): void {
  const byMetadata = allowed.includes('metadata');
  const unknown = Object.keys(req.query).filter((name) =>
    name === 'metadata' || METADATA_PARAM.test(name) ? !byMetadata || name === 'metadata' : !allowed.includes(name),
  );
  const takes = allowed.map((name) => (name === 'metadata' ? 'metadata[key]' : name)).join(', ') || 'none';
  if (unknown.length > 0)
    throw new ApiError(
      'unknown_parameter',
      `Unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; this list takes ${takes}.`,
      unknown.map((name) => ({ path: name, message: `not a parameter of this list (${takes})` })),
    );
}

/**
 * `limit` (1–100, default 20) and an opaque `cursor`; 422 when malformed. Every other query
 * parameter must be one of the list's `filters`: an unknown one (a typo, a filter this list does not
 * have) is answered 400 `unknown_parameter` naming the allowed ones, never silently ignored.
 */
export function listParams(
  req: Request,
  filters: readonly string[] = [],
): { limit: number; cursor: ReturnType<typeof decodeCursor> } {
  onlyParams(req, ['limit', 'cursor', ...filters]);
  const rawLimit = req.query.limit;
  const limit = rawLimit === undefined ? 20 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new ApiError('validation_failed', undefined, [{ path: 'limit', message: 'an integer from 1 to 100' }]);
  }
  const rawCursor = req.query.cursor;
  if (rawCursor === undefined) return { limit, cursor: null };
  const cursor = typeof rawCursor === 'string' ? decodeCursor(rawCursor) : null;
  if (!cursor)
    throw new ApiError('validation_failed', undefined, [{ path: 'cursor', message: 'not a cursor this API returned' }]);
  return { limit, cursor };
}

/** A list's answer from the `limit + 1` rows fetched: the page's views and the next page's cursor. */
export function pageOf<T extends { createdAt: Date; id: string }, V>(
  rows: readonly T[],
  limit: number,
  view: (row: T) => V,
) {
  const page = rows.slice(0, limit);
  return {
    data: page.map(view),
    nextCursor: rows.length > limit && page.length > 0 ? encodeCursor(page[page.length - 1]!) : null,
  };
}

/** Opaque cursor over (createdAt, id), newest first. */
export function encodeCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), row.id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | null {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    if (Number.isNaN(createdAt.getTime()) || typeof id !== 'string' || !isUuid(id)) return null;
    return { createdAt, id };
  } catch {
    return null;
  }
}

const METADATA_PARAM = /^metadata\[(.*)\]$/s;

/**
 * A list's metadata filter: each `metadata[key]=value` query parameter (all of them must match), or
 * undefined when none is given; 422 naming a key or value the rules refuse, or a key given twice.
 */
export function metadataFilter(req: Request): Metadata | undefined {
  const filter: Metadata = {};
  const problems: { path: string; message: string }[] = [];
  for (const [name, value] of Object.entries(req.query)) {
    const key = METADATA_PARAM.exec(name)?.[1];
    if (key === undefined) continue;
    if (typeof value !== 'string') {
      problems.push({ path: name, message: 'given once, as a string' });
      continue;
    }
    problems.push(...metadataKeyProblems(key, name), ...metadataValueProblems(value, name, false));
    filter[key] = value;
  }
  if (problems.length > 0) throw new ApiError('validation_failed', undefined, problems);
  return Object.keys(filter).length > 0 ? filter : undefined;
}

/** A metadata change's outcome as the API answers it: 404, or 422 when it would pass 50 keys. */
export function changed<T>(outcome: T | 'not_found' | 'too_many_keys'): T {
  if (outcome === 'not_found') throw new ApiError('not_found');
  if (outcome === 'too_many_keys')
    throw new ApiError('validation_failed', undefined, [
      { path: 'metadata', message: `at most ${METADATA_LIMITS.keys} keys once changed` },
    ]);
  return outcome;
}
