/** Processes, ports and polling for tests and benchmarks. */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';

/**
 * `n` different TCP ports free on the loopback right now. All `n` are held open together before any
 * is let go, so no two are the same, as they can be when single free ports are asked for one after
 * another. They are drawn at random from below the kernel's ephemeral range
 * (`net.ipv4.ip_local_port_range`), which it hands to everything that listens on port 0 or connects
 * out: a port let go here is not given to another test's server (or a Redis or Postgres client)
 * before the process it is meant for binds it. Two callers drawing the same port at the same moment
 * is the remaining chance (about one in 10,000 a port).
 */
export async function freePorts(n: number): Promise<number[]> {
  const low = 20_000;
  const below = ephemeralLow();
  const held: Server[] = [];
  try {
    for (let tries = 0; held.length < n; tries++) {
      if (tries > 200 || below - low < 1_000) throw new Error('no port free below the ephemeral range');
      const port = low + Math.floor(Math.random() * (below - low));
      if (held.some((s) => (s.address() as AddressInfo).port === port)) continue;
      const server = await new Promise<Server | undefined>((resolve) => {
        const s = createServer();
        s.once('error', () => resolve(undefined)).listen(port, '127.0.0.1', () => resolve(s));
      });
      if (server) held.push(server);
    }
    return held.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((closed) => s.close(closed))));
  }
}

/** The first port of the kernel's ephemeral range; Linux's default where it cannot be read. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low)) return low;
  } catch {
    // not Linux, or /proc not mounted
  }
  return 32_768;
}

/** A TCP port free on the loopback right now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** Polls `check` every 50 ms until it is true; fails after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `redis-server` arguments for a private, throwaway Redis on `port`: loopback only, no persistence. */
export function privateRedisArgs(port: number, maxmemoryPolicy = 'noeviction'): string[] {
  return [
    ...['--port', String(port), '--bind', '127.0.0.1'],
    ...['--save', '', '--appendonly', 'no', '--maxmemory-policy', maxmemoryPolicy],
  ];
}

/**
 * User + system CPU ms (Linux /proc) of one process; or summed over every process whose command
 * name is `comm` (all of Postgres's backends, say); or of a process with its children, those alive
 * and those ended (`tree`: a private Postgres's postmaster, so another cluster on the machine does
 * not count). A process that is gone counts 0; for the benchmarks' "where did the cores go" lines.
 */
export function cpuMs(filter: { pid: number | undefined } | { comm: string } | { tree: number | undefined }): number {
  const pids = 'pid' in filter ? [String(filter.pid)] : readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      if ('comm' in filter && stat.slice(stat.indexOf('(') + 1, close) !== filter.comm) continue;
      // fields[1] is the parent's pid.
      if ('tree' in filter && pid !== String(filter.tree) && fields[1] !== String(filter.tree)) continue;
      // utime + stime; by name or tree, cutime + cstime too: a process that ended (a Postgres backend
      // whose connection closed) is counted in its parent's, so the total never goes back.
      const own = Number(fields[11]) + Number(fields[12]);
      const children = 'pid' in filter ? 0 : Number(fields[13]) + Number(fields[14]);
      total += ((own + children) * 1000) / 100;
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

/**
 * The environment variables a Markdown document lists under `heading`: every backticked
 * UPPER_CASE name in the first column of its tables, or at the head of its list items, up to the
 * next heading of the same or a higher level. For tests that keep configuration docs and config schemas in step.
 */
export function documentedVariables(markdownFile: string, heading: string): Set<string> {
  const lines = readFileSync(markdownFile, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`${markdownFile}: no heading "${heading}"`);
  const level = /^#+/.exec(heading)?.[0].length ?? 1;
  const names = new Set<string>();
  for (const line of lines.slice(start + 1)) {
    const h = /^(#+) /.exec(line);
    if (h && h[1]!.length <= level) break;
    // A table row's first cell, or a list item's words before its first " — " or " (".
    const firstCell = /^\|([^|]*)\|/.exec(line)?.[1] ?? /^- (.*?)(?: —| \(|$)/.exec(line)?.[1] ?? '';
    for (const m of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!);
  }
  return names;
}

/**
 * Node's arguments to run a TypeScript entry point from its sources (tsx's loader and the workspaces'
 * source condition), as `npm run dev` does. With `profileAs` given and TIMBRA_CPU_PROF_DIR set, the
 * process writes a V8 CPU profile to `$TIMBRA_CPU_PROF_DIR/<profileAs>` when it stops — one directory
 * a process, since each of its threads (tsx's loader is one) writes its own; `--cpu-prof` is an
 * argument because Node refuses it in NODE_OPTIONS (docs/performance.md).
 */
export function tsEntryArgs(entry: string, profileAs?: string): string[] {
  const dir = process.env.TIMBRA_CPU_PROF_DIR;
  const profile =
    dir && profileAs ? ['--cpu-prof', `--cpu-prof-dir=${dir}/${profileAs.replace(/[^\w.-]+/g, '-')}`] : [];
  return [...profile, '--import', 'tsx', '--conditions=@timbra/source', entry];
}

/**
 * Runs an app's entry point (TypeScript sources, as `npm run dev` does) with only `env` (and PATH)
 * until it exits: for start-up checks. @returns its exit status and what it wrote to stderr.
 */
export function runEntryPoint(
  mainTs: string,
  env: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, tsEntryArgs(mainTs), {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * The environment for a server a test starts beside the code under test (redis-server): without
 * libfaketime's preload, so when the suite runs under a fake clock (`faketime`, CI's 2027 run) the
 * server keeps the real one, as Postgres and Redis do in production.
 */
export function realClockEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['LD_PRELOAD', 'FAKETIME', 'FAKETIME_DONT_RESET', 'DONT_FAKE_MONOTONIC']) delete env[name];
  return env;
}

/**
 * The p-th percentile (0–100) of `sorted` (ascending), nearest rank: the benchmarks' one definition.
 * NaN when there is nothing to rank.
 */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}
