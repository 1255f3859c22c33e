import { createServer, type Server } from 'node:http';
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { pingDatabase, type PrismaClient } from '@timbra/db';

export interface HealthDeps {
  prisma: PrismaClient;
  redis: Redis;
  queue: Queue;
  /** Absent when this process does not stamp. */
  worker?: Worker;
  /** Not ready when jobs wait and nothing was consumed for this long. */
  stallMs: number;
  /** Served on /metrics when given. */
  metrics?: { registry: { contentType: string; metrics: () => Promise<string> } };
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
      await pingDatabase(deps.prisma);
      checks.postgres = 'ok';
    } catch {
      checks.postgres = 'unreachable';
    }
    try {
      checks.redis = (await deps.redis.ping()) === 'PONG' ? 'ok' : 'unexpected';
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

  return {
    readiness,
    /** `GET /healthz` (process up), `GET /readyz` and `GET /metrics` on a small HTTP port. */
    listen(port: number, host: string): Promise<Server> {
      const server = createServer((req, res) => {
        if (req.url === '/healthz') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
        } else if (req.url === '/readyz') {
          readiness().then(
            (r) => res.writeHead(r.ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(r)),
            () => res.writeHead(503).end(),
          );
        } else if (req.url === '/metrics' && deps.metrics) {
          const { registry } = deps.metrics;
          registry.metrics().then(
            (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
            () => res.writeHead(500).end(),
          );
        } else {
          res.writeHead(404).end();
        }
      });
      return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
    },
  };
}
