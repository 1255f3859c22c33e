/**
 * The one way the API, the worker and the ops CLI connect to Redis: one server, or a Redis Cluster.
 *
 * `REDIS_URL` is one `redis://` (or `rediss://`) URL; with `REDIS_CLUSTER=true` it is one or more
 * seed nodes of a cluster, comma-separated (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`), whose
 * credentials and TLS, taken from the first, apply to every node. On a cluster every key of a queue
 * must hash to one slot: the queue prefix must carry a hash tag (`{timbra}`, the default) — see
 * `assertClusterPrefix`.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { UNREACHABLE_CODES } from './network.ts';

/** A connection to one Redis or to a Redis Cluster: BullMQ and our code accept either. */
export type RedisConnection = Redis | Cluster;

/** Where Redis is: one server, or a cluster's seed nodes. */
export type RedisTarget =
  { kind: 'single'; url: string } | { kind: 'cluster'; nodes: { host: string; port: number }[]; options: RedisOptions };

/** Reads REDIS_URL (and REDIS_CLUSTER): throws an Error whose message names the problem, never a password. */
export function redisTarget(url: string, cluster = false): RedisTarget {
  const urls = url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (urls.length === 0) throw new Error('REDIS_URL is empty');
  if (!cluster) {
    if (urls.length > 1) throw new Error('REDIS_URL lists several nodes: set REDIS_CLUSTER=true for a Redis Cluster');
    return { kind: 'single', url: urls[0]! };
  }
  const parsed = urls.map((u) => {
    let p: URL;
    try {
      p = new URL(u);
    } catch {
      throw new Error('REDIS_URL: each cluster node is a redis:// or rediss:// URL');
    }
    if (p.protocol !== 'redis:' && p.protocol !== 'rediss:')
      throw new Error('REDIS_URL: each cluster node is a redis:// or rediss:// URL');
    return p;
  });
  const first = parsed[0]!;
  const options: RedisOptions = {
    ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
    ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
    ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  return {
    kind: 'cluster',
    nodes: parsed.map((p) => ({ host: p.hostname, port: Number(p.port || 6379) })),
    options,
  };
}

/**
 * A connection to `target`, with `options` for every node (`maxRetriesPerRequest: null` for BullMQ's
 * workers, `lazyConnect`, …). A cluster client follows MOVED/ASK redirections and slot changes.
 */
export function connectRedis(target: RedisTarget, options: RedisOptions = {}): RedisConnection {
  if (target.kind === 'single') return new Redis(target.url, options);
  const { lazyConnect, enableOfflineQueue, retryStrategy, ...nodeOptions } = options;
  return new Cluster(target.nodes, {
    redisOptions: { ...target.options, ...nodeOptions },
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    // The caller's reconnection policy applies to the cluster as a whole.
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) ?? null } : {}),
  });
}

/** On a cluster, a queue prefix without a hash tag spreads a queue's keys over slots: BullMQ's scripts then fail. */
export function assertClusterPrefix(target: RedisTarget, prefix: string): void {
  if (target.kind === 'cluster' && !/\{[^}]+\}/.test(prefix))
    throw new Error(
      `QUEUE_PREFIX "${prefix}" has no hash tag: on a Redis Cluster every key of a queue must be in one slot (use e.g. {timbra})`,
    );
}

/**
 * Every master's `maxmemory-policy` (one server: its own). BullMQ loses jobs on an evicting Redis,
 * and on a cluster each master evicts on its own.
 */
export async function maxmemoryPolicies(connection: RedisConnection): Promise<string[]> {
  const nodes = connection instanceof Cluster ? connection.nodes('master') : [connection];
  return Promise.all(
    nodes.map(async (node) => ((await node.config('GET', 'maxmemory-policy')) as string[])[1] ?? 'unknown'),
  );
}

/** What is wrong with REDIS_URL, REDIS_CLUSTER and QUEUE_PREFIX together, as configuration problems (none: []). */
export function redisConfigProblems(url: string, cluster: boolean, prefix: string): string[] {
  let target: RedisTarget;
  try {
    target = redisTarget(url, cluster);
  } catch (error) {
    return [(error as Error).message];
  }
  try {
    assertClusterPrefix(target, prefix);
  } catch (error) {
    return [(error as Error).message];
  }
  return [];
}

/** What `logRedisOutages` and `bullmqErrorListener` log with: pino's shape. */
export interface OutageLogger {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

// The socket's codes, and ioredis's own words for the same.
const REDIS_UNREACHABLE = new RegExp(
  [
    ...UNREACHABLE_CODES,
    'Connection is closed',
    'Failed to refresh slots cache',
    'None of startup nodes is available',
  ].join('|'),
  'i',
);

/** An error that only says Redis cannot be reached (refused, reset, timed out, closed): an outage, not a bug. */
export function isRedisConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  const text = `${typeof e?.code === 'string' ? e.code : ''} ${typeof e?.message === 'string' ? e.message : ''}`;
  return REDIS_UNREACHABLE.test(text);
}

/**
 * Logs a Redis outage once, not once per reconnection attempt: the first connection error is a
 * warning (`redis unreachable`), the ones after it debug lines, and the connection's return one info
 * line with how long it lasted and how many errors it saw. BullMQ's queues and workers report the
 * same outage on their own connections: their listeners log connection errors at debug
 * (`isRedisConnectionError`) and everything else as before.
 */
export function logRedisOutages(connection: RedisConnection, logger: OutageLogger): void {
  let since: number | undefined;
  let errors = 0;
  connection.on('error', (error: Error) => {
    errors++;
    if (since === undefined) {
      since = Date.now();
      logger.warn({ err: error.message }, 'redis unreachable: retrying (jobs wait; Postgres keeps the record)');
    } else logger.debug({ err: error.message, errors }, 'redis still unreachable');
  });
  connection.on('ready', () => {
    if (since === undefined) return;
    logger.info({ downMs: Date.now() - since, errors }, 'redis reachable again');
    since = undefined;
    errors = 0;
  });
}

/**
 * The `error` listener for a BullMQ queue or worker: without one BullMQ prints its errors raw to
 * stderr. A connection error is part of an outage `logRedisOutages` tells once: debug here; a job
 * gone from Redis (`isJobGoneFromRedis`) a warning that says what happens to it; any other error
 * at `level`, as `what`.
 */
export function bullmqErrorListener(
  logger: OutageLogger,
  what: string,
  level: 'warn' | 'error',
  fields: object = {},
): (error: Error) => void {
  return (error) => {
    if (isRedisConnectionError(error)) logger.debug({ err: error.message, ...fields }, `${what}: redis unreachable`);
    else if (isJobGoneFromRedis(error))
      logger.warn(
        { err: error.message, ...fields },
        `${what}: the job is no longer this worker's in Redis (lost with it, or taken again); Postgres keeps the record and the sweeper publishes again what is not done`,
      );
    else logger[level]({ err: error, ...fields }, what);
  };
}

/**
 * BullMQ's answer when a job it worked on is no longer this worker's by the time it marks it
 * finished or retried: "Missing key for job I-…. moveToFinished" (gone: every job in flight when
 * Redis restarts empty) or "Missing lock for job …" (its lock lost: Redis restarted and the job was
 * published again, or the lock expired and another worker took it). Not an error of ours: the
 * attempt's outcome is already in Postgres, and a job not done is published again by the sweeper
 * (or is being worked on elsewhere; the PAC's idempotency makes a second attempt harmless).
 */
export function isJobGoneFromRedis(error: unknown): boolean {
  const message = (error as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' && /^Missing (key|lock) for job /.test(message);
}
