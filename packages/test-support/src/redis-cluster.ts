/**
 * A throwaway Redis Cluster on the loopback for tests: `masters` redis-servers with
 * `--cluster-enabled yes` (no replicas, no persistence) joined by `redis-cli --cluster create`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { privateRedisArgs, realClockEnv } from './system.ts';

const run = promisify(execFile);

export interface RedisClusterProcess {
  nodes: { host: string; port: number }[];
  /** The seed nodes as REDIS_URL takes them with REDIS_CLUSTER=true. */
  url: string;
  stop: () => Promise<void>;
}

const listenable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
      .once('error', () => resolve(false))
      .listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A port free on the loopback whose cluster bus port (port + 10000) is free too: below the ephemeral
 * range, so the bus port exists; tried at random.
 */
async function freeClusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await listenable(port)) && (await listenable(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a Redis Cluster node');
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts a cluster of `masters` nodes and waits for `cluster_state:ok` on every node. */
export async function startRedisCluster(masters = 3): Promise<RedisClusterProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'timbra-redis-cluster-'));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < masters; i++) {
    const port = await freeClusterPort(taken);
    taken.add(port).add(port + 10_000);
    ports.push(port);
  }
  const children: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      [
        ...privateRedisArgs(port),
        ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)],
        ...['--cluster-node-timeout', '2000', '--dir', dir],
      ],
      { stdio: 'ignore', env: realClockEnv() },
    ),
  );
  const cli = (port: number, ...args: string[]) =>
    run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { env: realClockEnv() });
  const stop = async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(
      children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : Promise.resolve())),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports)
      await waitUntil(`redis node ${port}`, async () => (await cli(port, 'ping')).stdout.trim() === 'PONG', 10_000);
    await run(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { env: realClockEnv() },
    );
    for (const port of ports)
      await waitUntil(
        `cluster state on ${port}`,
        async () => (await cli(port, 'cluster', 'info')).stdout.includes('cluster_state:ok'),
        20_000,
      );
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    url: ports.map((p) => `redis://127.0.0.1:${p}`).join(','),
    stop,
  };
}
