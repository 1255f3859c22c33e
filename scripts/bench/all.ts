/**
 * `npm run bench [-- --only freeze,e2e]`: every benchmark in turn — bench:freeze, bench:sandbox,
 * bench:ingest, bench:drain, bench:fairness, bench:e2e, bench:e2e against the cost baseline in three
 * alternating pairs (`e2e-compare`), bench:history (10 000 000 invoices) — each printing its figures
 * beside its references as it goes; then one table of every verdict they printed (each line that ends
 * a target with OK or MISSED), so the state of all the targets reads in one place after a long run.
 * A benchmark that fails is reported and the others still run; the exit code is 1 if any failed. A
 * missed target is a figure, not a failure.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

/**
 * The commit issue #49's cost targets compare against (Postgres and Timbra's own CPU a stamped
 * payment): the code as it was when that work began.
 */
const COST_BASELINE = '979bdf5567482bff5842016d1d49472a08db9afc';

const BENCHES: readonly (readonly [name: string, script: string, args: readonly string[]])[] = [
  ['freeze', 'freeze', []],
  ['sandbox', 'sandbox', []],
  ['ingest', 'ingest', []],
  ['drain', 'drain', []],
  ['fairness', 'fairness', []],
  ['e2e', 'e2e', []],
  ['e2e-compare', 'e2e', ['--compare', COST_BASELINE, '--pairs', '3']],
  ['history', 'history', ['--invoices', '10000000']],
];

const { values } = parseArgs({ options: { only: { type: 'string' } } });
const only = values.only?.split(',').map((s) => s.trim());
const unknown = only?.filter((name) => !BENCHES.some(([n]) => n === name)) ?? [];
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark ${unknown.join(', ')}: one of ${BENCHES.map(([n]) => n).join(', ')}\n`);
  process.exit(2);
}

/** A verdict line: a figure, its reference or target, and OK or MISSED (then, at most, medians in brackets). */
const VERDICT = /\s(OK|MISSED)(\s{2,}.*)?$/;
interface Verdict {
  line: string;
  met: boolean;
}

/**
 * Runs `npm run bench:<script>`, its output passed through; resolves with its verdict lines and exit
 * code. Lines quoted with "│" (a comparison's runs) are not verdicts of their own.
 */
function run(script: string, args: readonly string[]): Promise<{ verdicts: Verdict[]; code: number }> {
  return new Promise((done) => {
    const child = spawn('npm', ['run', '--silent', `bench:${script}`, '--', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const verdicts: Verdict[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      process.stdout.write(`${line}\n`);
      const verdict = line.startsWith('│') ? null : VERDICT.exec(line);
      if (verdict) verdicts.push({ line: line.trim(), met: verdict[1] === 'OK' });
    });
    child.on('close', (code, signal) => done({ verdicts, code: code ?? (signal ? 128 : 1) }));
  });
}

const results: { name: string; verdicts: Verdict[]; code: number; seconds: number }[] = [];
for (const [name, script, args] of BENCHES) {
  if (only && !only.includes(name)) continue;
  process.stdout.write(`\n== bench:${script} ${args.join(' ')} ==\n`);
  const started = Date.now();
  results.push({ name, ...(await run(script, args)), seconds: (Date.now() - started) / 1000 });
}

const verdicts = results.flatMap((r) => r.verdicts);
const met = verdicts.filter((v) => v.met).length;
process.stdout.write(`\n== every target (${new Date().toISOString()}) ==\n`);
for (const r of results) {
  process.stdout.write(
    `bench:${r.name} (${r.seconds.toFixed(0)} s)${r.code === 0 ? '' : `: FAILED with exit code ${r.code}`}\n`,
  );
  for (const v of r.verdicts) process.stdout.write(`  ${v.line}\n`);
}
process.stdout.write(`${met} of ${verdicts.length} targets met\n`);
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
