import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { API_ERRORS } from '../src/http/errors.ts';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const rows = [...doc.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map((m) => [m[1], Number(m[2])] as const);

  it('lists every error code the API returns, with its status', () => {
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(API_ERRORS).map(([code, e]) => [code, e.status])),
    );
  });
});
