/**
 * `npm run bench:e2e -- --compare COMMIT [--pairs N] [other bench:e2e options]`: the end-to-end
 * benchmark run on COMMIT's product code and on this checkout's in turns (baseline, this, baseline,
 * this, …: N pairs, default 3), so that both see the machine's same hour; each pair's ratios printed
 * as it ends, then every pair and their median beside the targets.
 *
 * The baseline is a git worktree of COMMIT in the temporary directory with its own `npm ci` (made once
 * and kept for the next comparison). Both runs use this checkout's benchmark, load generator and PAC
 * sandbox; the baseline's run starts COMMIT's apps, on a database made with COMMIT's migrations
 * (`--tree`). So the two differ only in the product's code and schema.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { percentile } from '@timbra/test-support';
import { ROOT } from '../lib/processes.ts';

/** What one run writes with `--json`: a phase's figures per stamped payment. */
export interface E2eFigures {
  /** The checkout whose product code ran. */
  tree: string;
  fixed: {
    rate: number;
    stamped: number;
    ownMs: number;
    postgresMs: number;
    redisCommands: number;
    /** BullMQ's own commands for one job of the same shape, measured in the same run (the reference). */
    bullmqCommands: number;
    postgresCommits: number;
    statements: number;
    /** µs of CPU the canary's fixed piece of work took through the phase: the machine's speed then. */
    canaryUs: number;
  };
  saturated: {
    stamped: number;
    perSecond: number;
    ownMs: number;
    postgresMs: number;
    redisCommands: number;
    /** BullMQ's own commands for one job of the same shape, measured in the same run (the reference). */
    bullmqCommands: number;
    postgresCommits: number;
    statements: number;
    canaryUs: number;
  };
}

/** The ratios the issue's targets are about (this ÷ baseline), each with its target. */
const RATIOS = [
  {
    name: 'Postgres CPU a stamped payment, saturated',
    of: (f: E2eFigures) => f.saturated.postgresMs,
    machine: (f: E2eFigures) => f.saturated.canaryUs,
    target: 0.45,
  },
  {
    name: "Timbra's own CPU a stamped payment, saturated",
    of: (f: E2eFigures) => f.saturated.ownMs,
    machine: (f: E2eFigures) => f.saturated.canaryUs,
    target: 0.6,
  },
  {
    name: "Timbra's own CPU a stamped payment, fixed rate",
    of: (f: E2eFigures) => f.fixed.ownMs,
    machine: (f: E2eFigures) => f.fixed.canaryUs,
    target: 0.6,
  },
] as const;

const out = (line: string) => process.stdout.write(`${line}\n`);
const progress = (line: string) => process.stderr.write(`${new Date().toISOString()} bench:e2e --compare: ${line}\n`);
const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
/** The middle ratio (of an even count, the upper middle one: test-support's nearest-rank percentile). */
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

/**
 * A worktree of `commit` with its dependencies installed, made once: a directory without the mark
 * that `npm ci` finished (an earlier attempt interrupted) is made again.
 */
function baselineTree(commit: string): string {
  const dir = join(tmpdir(), `timbra-bench-${commit.slice(0, 12)}`);
  const ready = join(dir, '.timbra-bench-ready');
  if (existsSync(ready)) return dir;
  rmSync(dir, { recursive: true, force: true });
  git('worktree', 'prune');
  progress(`a worktree of ${commit.slice(0, 12)} in ${dir}, and its npm ci (a few minutes, once)`);
  git('worktree', 'add', '--detach', dir, commit);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 2, 2] });
  writeFileSync(ready, `${new Date().toISOString()}\n`);
  return dir;
}

/** One bench:e2e run (this checkout's benchmark), its output quoted; resolves with its figures. */
function runOnce(label: string, args: readonly string[], tree: string | undefined): Promise<E2eFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-e2e-compare-'));
  const json = join(dir, 'figures.json');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...['--import', 'tsx', '--conditions=@timbra/source', join(ROOT, 'scripts/bench/e2e-bench.ts')],
        ...args,
        ...['--json', json],
        ...(tree ? ['--tree', tree] : []),
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // Quoted, so that `npm run bench`'s table takes the comparison's verdicts, not each run's.
    createInterface({ input: child.stdout }).on('line', (line) => out(`│ ${label}  ${line}`));
    child.on('close', (code) => {
      try {
        if (code !== 0) throw new Error(`the ${label} run exited with ${code}`);
        resolve(JSON.parse(readFileSync(json, 'utf8')) as E2eFigures);
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/** @returns the exit code: 0 when every run finished (a missed target is a figure, not a failure). */
export async function compareE2e(options: {
  baseline: string;
  pairs: number;
  args: readonly string[];
}): Promise<number> {
  if (!(Number.isInteger(options.pairs) && options.pairs >= 1)) throw new Error('--pairs N: N ≥ 1');
  const commit = git('rev-parse', '--verify', `${options.baseline}^{commit}`);
  const head = git('rev-parse', '--short=12', 'HEAD');
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  const thisName = `${head}${dirty ? ' with uncommitted changes' : ''}`;
  const tree = baselineTree(commit);
  const pairs: { baseline: E2eFigures; current: E2eFigures }[] = [];
  try {
    for (let i = 1; i <= options.pairs; i++) {
      progress(`pair ${i} of ${options.pairs}: the baseline ${commit.slice(0, 12)}`);
      const baseline = await runOnce(`baseline#${i}`, options.args, tree);
      progress(`pair ${i} of ${options.pairs}: this checkout (${thisName})`);
      const current = await runOnce(`this#${i}`, options.args, undefined);
      pairs.push({ baseline, current });
      out(
        `pair ${i}: ${RATIOS.map((r) => `${r.name} ${r.of(current).toFixed(2)} / ${r.of(baseline).toFixed(2)} ms = ${(r.of(current) / r.of(baseline)).toFixed(2)}×`).join('; ')}`,
      );
    }
  } catch (error) {
    out(`bench:e2e --compare FAILED: ${(error as Error).message}`);
    return 1;
  }

  const fixedRate = pairs[0]!.current.fixed.rate;
  out('');
  out(`bench:e2e --compare — ${new Date().toISOString()} — ${pairs.length} alternating pairs`);
  out(`  baseline ${commit.slice(0, 12)} (${git('log', '-1', '--format=%s', commit)}) ← reference`);
  out(`  this     ${thisName}`);
  for (const r of RATIOS) {
    const ratios = pairs.map((p) => r.of(p.current) / r.of(p.baseline));
    const m = median(ratios);
    const phase = r.name.endsWith('fixed rate') ? ` (${fixedRate}/s)` : '';
    out(
      `  ${r.name}${phase}: ${pairs.map((p) => `${r.of(p.current).toFixed(2)}/${r.of(p.baseline).toFixed(2)}`).join(', ')} ms = ${ratios.map((x) => `${x.toFixed(2)}×`).join(', ')}; median ${m.toFixed(2)}×   (target ≤ ${r.target}×)  ${m <= r.target ? 'OK' : 'MISSED'}`,
    );
    // The same, each run's CPU divided by what the canary's fixed work cost in that phase: the
    // machine's own speed, which moves ±30% between runs, taken out (../lib/canary.ts).
    const steady = pairs.map(
      (p) => r.of(p.current) / r.machine(p.current) / (r.of(p.baseline) / r.machine(p.baseline)),
    );
    out(
      `    in the machine's speed of each run (canary ${pairs.map((p) => `${r.machine(p.current).toFixed(0)}/${r.machine(p.baseline).toFixed(0)}`).join(', ')} µs): ${steady.map((x) => `${x.toFixed(2)}×`).join(', ')}; median ${median(steady).toFixed(2)}× (a figure: the verdict is the line above's)`,
    );
  }
  const counts = (name: string, of: (f: E2eFigures) => number) =>
    `    ${name}: this ${pairs.map((p) => of(p.current).toFixed(1)).join(', ')}; baseline ${pairs.map((p) => of(p.baseline).toFixed(1)).join(', ')}`;
  out('  per stamped payment, each pair:');
  const bullmq = (of: (f: E2eFigures) => number) =>
    `; BullMQ's own a job ${pairs.flatMap((p) => [p.current, p.baseline].map((f) => of(f).toFixed(1))).join(', ')} ← reference`;
  out(
    counts('Redis commands, saturated', (f) => f.saturated.redisCommands) + bullmq((f) => f.saturated.bullmqCommands),
  );
  out(counts(`Redis commands, ${fixedRate}/s`, (f) => f.fixed.redisCommands) + bullmq((f) => f.fixed.bullmqCommands));
  out(counts('Postgres commits, saturated', (f) => f.saturated.postgresCommits));
  out(counts(`Postgres commits, ${fixedRate}/s`, (f) => f.fixed.postgresCommits));
  out(counts('Postgres statements, saturated', (f) => f.saturated.statements));
  out(counts('stamped a second, saturated', (f) => f.saturated.perSecond));
  return 0;
}
