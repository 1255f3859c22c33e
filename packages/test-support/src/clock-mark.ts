/**
 * Tests whose outcome depends on the calendar — on the SAT's own test certificates being valid
 * (they end 2027-05-18), or on a rule comparing two clocks (ARCHITECTURE.md, "Clocks: one per rule")
 * — say so with an `@clock <why>` tag in their file's first comment. CI runs every test once, and
 * the marked ones again with the application's clock at 2027-06-01 (`npm run test:clock` under
 * faketime; docs/development.md). A test that reads the SAT's own certificates without the tag
 * fails here, so the 2027 run cannot miss it.
 */
import { readFileSync } from 'node:fs';

/** The `@clock` tag, as the file's first comment carries it. */
export const CLOCK_MARK = /^\s*(?:\/\/|\*|\/\*\*)\s*@clock\s+\S/m;

/** Whether the test file at `path` carries the tag in its leading comment. */
export function isClockMarked(path: string): boolean {
  const text = readFileSync(path, 'utf8');
  const leading = /^(?:\s*(?:\/\*[\s\S]*?\*\/|\/\/[^\n]*))+/.exec(text)?.[0] ?? '';
  return CLOCK_MARK.test(leading);
}

/** The test file Jest is running now, when Jest runs this process. */
function runningTestFile(): string | undefined {
  const jestExpect = (globalThis as { expect?: { getState?: () => { testPath?: string } } }).expect;
  return process.env.JEST_WORKER_ID === undefined ? undefined : jestExpect?.getState?.().testPath;
}

/**
 * Throws when the running test file reads `what` (something whose validity is calendar-bound)
 * without the `@clock` tag. Outside Jest (benchmarks, the chaos harness) it does nothing.
 */
export function requireClockMark(what: string): void {
  const file = runningTestFile();
  if (file !== undefined && !isClockMarked(file))
    throw new Error(
      `${file} reads ${what} but its first comment has no "@clock <why>" tag: add one, so that CI runs it with the clock after that date too (docs/development.md, "Tests and the calendar")`,
    );
}
