import { createServer, type Server } from 'node:http';
import type { Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { pingDatabase, type PrismaClient } from '@timbra/db';
import type { RedisConnection } from '@timbra/db/redis';

export interface HealthDeps {
  prisma: PrismaClient;
  redis: RedisConnection;
  queue: Queue;
  /** Absent when this process does not stamp. */
  worker?: Worker;
  /** Not ready when jobs wait and nothing was consumed for this long. */
  stallMs: number;
}

function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms).unref()),
  ]);
}

export type Readiness = () => Promise<{ ok: boolean; checks: Record<string, string> }>;

/** What /metrics serves: a prom-client registry. */
interface MetricsRegistry {
  contentType: string;
  metrics: () => Promise<string>;
}

/**
 * Readiness that reflects consumption, not only a PING: a worker that stopped taking jobs while Redis
 * still answers (a known failure mode after Redis outages) is not ready when jobs are waiting and
 * none was started or finished for `stallMs`.
 */
export function createHealth(deps: HealthDeps) {
  let lastActivity = Date.now();
  const touch = () => {
    lastActivity = Date.now();
  };
  deps.worker?.on('active', touch);
  deps.worker?.on('completed', touch);
  deps.worker?.on('failed', touch);

  async function readiness(): Promise<{ ok: boolean; checks: Record<string, string> }> {
    const checks: Record<string, string> = {};
    try {
      await within(5_000, pingDatabase(deps.prisma));
      checks.postgres = 'ok';
    } catch {
      checks.postgres = 'unreachable';
    }
    try {
      // The worker's connection queues commands while Redis is away: a PING would wait for ever.
      checks.redis = (await within(2_000, deps.redis.ping())) === 'PONG' ? 'ok' : 'unexpected';
    } catch {
      checks.redis = 'unreachable';
    }
    if (deps.worker) {
      if (!deps.worker.isRunning() || deps.worker.isPaused()) checks.consumer = 'stopped';
      else {
        const waiting = checks.redis === 'ok' ? await deps.queue.getWaitingCount() : 0;
        checks.consumer = waiting > 0 && Date.now() - lastActivity > deps.stallMs ? 'stalled' : 'ok';
      }
    }
    return { ok: Object.values(checks).every((v) => v === 'ok'), checks };
  }

  return { readiness };
}

/**
 * `GET /healthz` (process up), `GET /readyz` and `GET /metrics` on a small HTTP port, opened before
 * anything else so an orchestrator sees the process (and why it is not ready) while it starts.
 */
export function listenHealth(
  port: number,
  host: string,
  deps: { readiness: Readiness; metrics: () => MetricsRegistry | undefined },
): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    } else if (req.url === '/readyz') {
      deps.readiness().then(
        (r) => res.writeHead(r.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(r)),
        () => res.writeHead(503).end(),
      );
    } else if (req.url === '/metrics' && deps.metrics()) {
      const registry = deps.metrics()!;
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/**
 * Runs `probe` until it succeeds, with backoff (0.5 s doubling to 30 s): each failure is a warning
 * and is what /readyz says under `what` meanwhile.
 */
export async function waitFor<T>(
  what: string,
  logger: Logger,
  checks: Record<string, string>,
  probe: () => Promise<T>,
): Promise<T> {
  let delay = 500;
  for (;;) {
    try {
      const value = await probe();
      checks[what] = 'ok';
      if (delay > 500) logger.info({ [what]: 'ok' }, `${what} reachable`);
      return value;
    } catch (error) {
      const reason = (error as Error).message || String(error);
      checks[what] = `unreachable: ${reason}`;
      logger.warn({ [what]: 'unreachable', err: reason, retryInMs: delay }, `${what} unreachable; retrying`);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 30_000);
    }
  }
}
