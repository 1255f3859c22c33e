/** docs/fiscal-rules.md lists every rule of the engine — code, status, node, documents, text — and nothing else. */
import { readFileSync } from 'node:fs';
import { expect, test } from '@jest/globals';
import { documentedRows, FISCAL_RULES_DOC, ruleRows } from '../scripts/fiscal-rules-table.ts';

test('the doc’s table is the engine’s rules, in order (npm run docs:rules writes it)', () => {
  expect(documentedRows(readFileSync(FISCAL_RULES_DOC, 'utf8'))).toEqual(ruleRows());
});
