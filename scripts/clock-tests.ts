/**
 * The calendar-bound tests (`@clock` in their first comment: the SAT's own certificates, rules that
 * compare two clocks), each workspace's run with only those files: `npm run test:clock`, which CI
 * runs under `faketime '2027-06-01 12:00:00'` after every test has run once on the real clock.
 * `-- --list` prints them instead. Exit code: the first failing workspace's, else 0.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isClockMarked } from '@timbra/test-support';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function testFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

const workspaces = ['packages', 'apps'].flatMap((top) =>
  readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name)),
);
const marked = workspaces
  .map((ws) => ({
    ws,
    name: (JSON.parse(readFileSync(join(ws, 'package.json'), 'utf8')) as { name: string }).name,
    files: testFiles(join(ws, 'test')).filter(isClockMarked),
  }))
  .filter((w) => w.files.length > 0);

if (process.argv.includes('--list')) {
  for (const w of marked) for (const f of w.files) process.stdout.write(`${relative(ROOT, f)}\n`);
} else {
  for (const w of marked) {
    process.stdout.write(`\n${w.name}: ${w.files.length} calendar-bound test files\n`);
    const run = spawnSync('npm', ['test', '-w', w.name, '--', ...w.files.map((f) => relative(w.ws, f))], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    if (run.status !== 0) {
      process.exitCode = run.status ?? 1;
      break;
    }
  }
}
