/** docs/fiscal-rules.md lists every rule of the engine, with its status, and nothing else. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from '@jest/globals';
import { SAT_RULES, type RuleStatus } from '../src/index.ts';

const DOC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/fiscal-rules.md');

const LABEL: Record<RuleStatus, string> = {
  enforced: 'enforced before freezing',
  construction: 'guaranteed by construction',
  sandbox: 'checked by the sandbox',
  'needs-sat-data': 'needs SAT data not available offline',
};

test('every rule is listed once, with its status', () => {
  const rows = [...readFileSync(DOC, 'utf8').matchAll(/^\|\s*((?:CFDI40|CRP20)\d{3})\s*\|\s*([^|]+?)\s*\|/gm)].map(
    (m) => `${m[1]} ${m[2]}`,
  );
  expect(rows).toEqual(SAT_RULES.map((r) => `${r.code} ${LABEL[r.status]}`));
});
