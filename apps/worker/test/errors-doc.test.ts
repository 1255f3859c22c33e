import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { WORKER_ERRORS } from '../src/errors.ts';

describe('docs/errors.md, worker failure codes', () => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('# Worker failure codes'));

  it('lists every code the worker writes, and no other', () => {
    const documented = [...section.matchAll(/^\|\s*`([A-Z_]+)`\s*\|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(WORKER_ERRORS).sort());
  });

  it('every code the worker source writes is in the catalogue', () => {
    // failureText('CODE', …) and deadLetter(…, 'CODE') with a literal: each literal must be declared.
    const sources = [
      'stamping/stamp-processor.ts',
      'invoices/cancel-processor.ts',
      'create-worker.ts',
      'stamping/pac-chain.ts',
    ].map((f) => readFileSync(new URL(`../src/${f}`, import.meta.url), 'utf8'));
    const literals = sources.flatMap((s) => [
      ...[...s.matchAll(/failureText\('([A-Z_]+)'/g)].map((m) => m[1]!),
      ...[...s.matchAll(/pacCode: '([A-Z_]+)'/g)].map((m) => m[1]!),
      ...[...s.matchAll(/code: '([A-Z_]+)'/g)].map((m) => m[1]!),
    ]);
    expect(literals.length).toBeGreaterThan(5);
    for (const code of literals) expect(Object.keys(WORKER_ERRORS)).toContain(code);
  });
});
