/**
 * Real processes for the chaos run and the end-to-end benchmark: each app started from its sources in its own process group, so
 * SIGKILL reaches the app itself; a private redis-server that can be killed and restarted empty.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { privateRedisArgs, realClockEnv, tsEntryArgs } from '@timbra/test-support';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every process group a Proc started and that has not exited: what `killLeftovers` kills. */
const live = new Set<ChildProcess>();

/**
 * The last resort when a harness ends without its own `finally` (an uncaught error, an unhandled
 * rejection, Ctrl-C or a SIGTERM): each app runs in a process group of its own (detached), out of
 * reach of the terminal's signals, so without this it would keep running — a Redis, a Postgres, the
 * apps — after the harness is gone. Synchronous: it runs from `process.on('exit')`.
 */
function killLeftovers(): void {
  for (const child of live) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}
process.on('exit', killLeftovers);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    process.stderr.write(`${signal}: stopping the processes this harness started\n`);
    killLeftovers();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });

const MAX_LINE = 8_000;

export class Proc {
  private child: ChildProcess | undefined;
  /** Last lines of output, for the report when something goes wrong. */
  readonly tail: string[] = [];
  starts = 0;
  /** Exits nobody asked for (not through `stop`): how, and the last lines before them. */
  readonly unexpectedExits: { code: number | null; signal: NodeJS.Signals | null; lastLines: string[] }[] = [];
  /** Told of each exit nobody asked for, as it happens (a harness logs it). */
  onUnexpectedExit?: (exit: Proc['unexpectedExits'][number]) => void;
  private stopping = false;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly env: Record<string, string>,
    /** Run as this user (a process started by root that must not run as root: Postgres). */
    private readonly user?: { uid: number; gid: number },
    private readonly cwd?: string,
  ) {}

  /**
   * An app started from its TypeScript entry point (as `npm run dev` does). With TIMBRA_CPU_PROF_DIR
   * set, each app writes a V8 CPU profile to DIR/<name> when it stops (`tsEntryArgs`):
   * `TIMBRA_CPU_PROF_DIR=/tmp/prof npm run bench:e2e` (docs/performance.md). `root` is the checkout
   * it runs from (default this one; another commit's, when a benchmark compares two).
   */
  static app(name: string, entry: string, env: Record<string, string>, root = ROOT): Proc {
    return new Proc(
      name,
      process.execPath,
      tsEntryArgs(join(root, entry), name),
      {
        ...(process.env as Record<string, string>),
        // The harnesses run against the sandbox PAC with the SAT test CSD.
        TIMBRA_PROFILE: 'sandbox',
        ...env,
      },
      undefined,
      root === ROOT ? undefined : root,
    );
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process unless it is running already (one instance per Proc, always). */
  start(): void {
    if (this.running) return;
    this.starts++;
    const child = spawn(this.command, this.args, {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      ...(this.cwd ? { cwd: this.cwd } : {}),
      ...this.user,
    });
    for (const stream of [child.stdout, child.stderr]) stream?.setEncoding('utf8').on('data', this.lines());
    // A failed spawn is an exited process: the supervisor tries again.
    child.on('error', (error) => this.tail.push(`spawn failed: ${error.message}`));
    if (child.pid !== undefined) live.add(child);
    this.stopping = false;
    child.once('exit', (code, signal) => {
      live.delete(child);
      if (this.stopping) return;
      const exit = { code, signal, lastLines: this.tail.slice(-5) };
      this.unexpectedExits.push(exit);
      this.onUnexpectedExit?.(exit);
    });
    this.child = child;
  }

  /**
   * A stream's chunks as whole lines into `tail` (a chunk may end mid-line; a fatal error's JSON
   * line with its stack is what a crash report needs whole), each cut at 8 000 characters.
   */
  private lines(): (chunk: string) => void {
    let partial = '';
    return (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!.slice(0, MAX_LINE);
      for (const line of lines.filter(Boolean)) {
        this.tail.push(line.slice(0, MAX_LINE));
        if (this.tail.length > 40) this.tail.shift();
      }
    };
  }

  /**
   * Sends `signal` to the whole process group and waits (at most 10 s) for the exit; a group still
   * there then is killed (SIGKILL), so no harness leaves a process behind it.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', () => resolve('exited')));
    this.stopping = true;
    try {
      process.kill(-child.pid!, signal);
    } catch {
      return;
    }
    const outcome = await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    if (outcome === 'exited') return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      return;
    }
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  }
}

/** Each exit of `procs` that no `stop` asked for (a crash), said through `log` as it happens, with why. */
export function reportUnexpectedExits(procs: readonly Proc[], log: (line: string) => void): void {
  for (const p of procs)
    p.onUnexpectedExit = ({ code, signal, lastLines }) =>
      log(`${p.name} exited on its own (${signal ?? `code ${code}`}); last lines:\n  ${lastLines.join('\n  ')}`);
}

/**
 * A redis-server of our own: no persistence, so a restart comes back empty (data lost). Servers keep
 * the real clock when the harness runs under a fake one (`faketime`), as in production.
 */
export function privateRedis(port: number): Proc {
  return new Proc('redis', 'redis-server', privateRedisArgs(port), realClockEnv() as Record<string, string>);
}

/**
 * A Postgres cluster of our own (`initdb` in a temporary directory, trust authentication, listening
 * on 127.0.0.1:`port` only), so it can be crashed and restarted: `proc.stop('SIGKILL')` kills the
 * postmaster (its children each run in a session of their own, out of the group's reach: they end
 * when they notice, telling each idle client "terminating connection due to unexpected postmaster
 * exit"), and the next `proc.start()` goes through crash recovery.
 * The binaries come from `$PG_BINDIR`, else `pg_config --bindir`. Started by root, it runs as the
 * `postgres` user (Postgres refuses to run as root), with the real clock as `privateRedis`.
 * `settings` are passed as `-c name=value` (`shared_preload_libraries`, say).
 * `remove()` deletes the cluster's directory.
 */
export function privatePostgres(
  port: number,
  settings: Record<string, string> = {},
): {
  proc: Proc;
  serverUrl: string;
  /** Whether it accepts connections now (pg_isready). */
  ready: () => Promise<boolean>;
  remove: () => void;
} {
  const bindir = process.env.PG_BINDIR ?? execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  if (!existsSync(join(bindir, 'initdb')))
    throw new Error(`no initdb in ${bindir}: install PostgreSQL's server package or set PG_BINDIR`);
  const user =
    process.getuid?.() === 0
      ? {
          uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
          gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
        }
      : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'timbra-pg-'));
  if (user) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  execFileSync(
    join(bindir, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
    { stdio: 'ignore', cwd: dir, env: realClockEnv(), ...user },
  );
  const proc = new Proc(
    'postgres',
    join(bindir, 'postgres'),
    [
      ...['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
    { ...(realClockEnv() as Record<string, string>), LC_ALL: 'C' },
    user,
  );
  return {
    proc,
    serverUrl: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    ready: () =>
      new Promise((resolve) =>
        execFile(join(bindir, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)], (error) => resolve(!error)),
      ),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Connects `redis` (made with `lazyConnect`) once its just-spawned server listens: a connect before could be refused. */
export async function connectWhenListening(redis: Redis, what: string, timeoutMs: number): Promise<void> {
  redis.on('error', () => undefined);
  await until(
    what,
    async () => {
      if (redis.status === 'wait' || redis.status === 'end') await redis.connect();
      return (await redis.ping()) === 'PONG';
    },
    timeoutMs,
  );
}

/** Resolves when `probe` is true; throws after `timeoutMs`. */
export async function until(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
