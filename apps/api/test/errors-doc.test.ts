import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { API_ERROR_TYPES, API_ERRORS, errorTypeOf, type ApiErrorCode } from '../src/http/errors.ts';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const rows = [...doc.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map((m) => [m[1], Number(m[2])] as const);

  it('lists every error code the API returns, with its status', () => {
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(API_ERRORS).map(([code, e]) => [code, e.status])),
    );
  });

  it('names every error type, and which codes each takes', () => {
    const documented = [...doc.matchAll(/^\|\s*`([a-z_]+_error)`\s*\|/gm)].map((m) => m[1]);
    expect(documented).toEqual([...API_ERROR_TYPES]);
    const types = Object.keys(API_ERRORS).map((code) => errorTypeOf(code as ApiErrorCode));
    expect(new Set(types)).toEqual(new Set(API_ERROR_TYPES));
    expect(errorTypeOf('idempotency_key_in_use')).toBe('idempotency_error');
    expect(errorTypeOf('forbidden')).toBe('permission_error');
  });
});
