/**
 * A throwaway Redis Cluster on the loopback for tests: `masters` redis-servers with
 * `--cluster-enabled yes` (no replicas, no persistence) joined by `redis-cli --cluster create`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts, privateRedisArgs, realClockEnv } from './system.ts';

const run = promisify(execFile);

export interface RedisClusterProcess {
  nodes: { host: string; port: number }[];
  /** The seed nodes as REDIS_URL takes them with REDIS_CLUSTER=true. */
  url: string;
  stop: () => Promise<void>;
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
  // Each node's client port and cluster bus port, drawn as every test's are (Redis 7's cluster-port:
  // the bus needs no fixed offset from the client port).
  const drawn = await freePorts(2 * masters);
  const ports = drawn.slice(0, masters);
  const children: ChildProcess[] = ports.map((port, i) =>
    spawn(
      'redis-server',
      [
        ...privateRedisArgs(port),
        ...['--cluster-enabled', 'yes', '--cluster-port', String(drawn[masters + i]!)],
        ...['--cluster-config-file', join(dir, `nodes-${port}.conf`)],
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
