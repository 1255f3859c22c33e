/**
 * The calendar-bound tests are marked (`@clock`), and the mark is checked where it matters: this
 * file has none, so reading the SAT's own certificates here is refused; a marked file is recognised.
 */
import { fileURLToPath } from 'node:url';
import { expect, test } from '@jest/globals';
import { isClockMarked, satTestCertificatePath, satTestCsdFiles } from '@timbra/test-support';

test('an unmarked test cannot read the SAT’s own certificates', () => {
  expect(() => satTestCsdFiles('EKU9003173C9')).toThrow(/clock-mark\.test\.ts reads the SAT's own test certificate/);
  expect(() => satTestCertificatePath('CACX7605101P8')).toThrow(/no "@clock <why>" tag/);
});

test('the mark is read from a file’s leading comment only', () => {
  expect(isClockMarked(fileURLToPath(import.meta.url))).toBe(false);
  expect(isClockMarked(fileURLToPath(new URL('./sello.test.ts', import.meta.url)))).toBe(true);
});
