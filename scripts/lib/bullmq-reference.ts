/**
 * BullMQ's own Redis commands for one job: the reference `bench:e2e` prints beside Timbra's Redis
 * commands a stamped payment. A private redis-server, jobs added as the relay adds them (`addBulk`,
 * the stamp job's options: removed on completion, 20 attempts, the custom backoff) and taken by a
 * Worker of the same concurrency whose handler only waits the PAC's latency. A stamped payment is one
 * such job, so this is what Redis costs a payment before Timbra does anything of its own; INFO
 * commandstats counts every command a Lua script calls, as it does for the product.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { freePort } from '@timbra/test-support';
import { stampJobOptions } from '@timbra/worker/jobs';
import { connectWhenListening, privateRedis, until } from './processes.ts';

export interface JobShape {
  /** The worker's concurrency (WORKER_CONCURRENCY). */
  concurrency: number;
  /** How long the handler waits: the PAC's latency. */
  latencyMs: number;
  /** Jobs to run. */
  jobs: number;
  /** One job every 1000/rate ms (a steady rate, the worker mostly idle); absent: as fast as they go. */
  rate?: number;
  /** Jobs a relay round adds together when there is no rate (RELAY_BATCH_SIZE). */
  batch: number;
}

/** Commands a job, in total and by command ("33.2 (xadd 4.0, …)", the most called first). */
export async function bullmqCommandsPerJob(shape: JobShape): Promise<{ total: number; line: string }> {
  const port = await freePort();
  const server = privateRedis(port);
  server.start();
  const connection = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null, lazyConnect: true });
  try {
    await connectWhenListening(connection, 'the reference redis-server', 10_000);
    const queue = new Queue('reference', { connection });
    let done = 0;
    const worker = new Worker(
      'reference',
      async () => {
        await new Promise((r) => setTimeout(r, shape.latencyMs));
        done++;
      },
      {
        connection,
        concurrency: shape.concurrency,
        lockDuration: 30_000,
        stalledInterval: 15_000,
        settings: { backoffStrategy: () => 1_000 },
      },
    );
    await worker.waitUntilReady();
    const policy = { attempts: 20, baseDelayMs: 2_000, maxDelayMs: 900_000 };
    const job = (i: number) => ({ name: 'stamp', data: { i }, opts: stampJobOptions(policy, `reference-${i}`) });
    const before = await commandstats(connection);
    const start = Date.now();
    if (shape.rate) {
      for (let i = 0; i < shape.jobs; i++) {
        const due = start + (i * 1000) / shape.rate;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        await queue.addBulk([job(i)]);
      }
    } else {
      for (let i = 0; i < shape.jobs; i += shape.batch)
        await queue.addBulk(Array.from({ length: Math.min(shape.batch, shape.jobs - i) }, (_, k) => job(i + k)));
    }
    await until('the reference jobs', () => Promise.resolve(done >= shape.jobs), 120_000);
    const after = await commandstats(connection);
    await worker.close();
    await queue.close();
    return commandsPer(before, after, shape.jobs);
  } finally {
    connection.disconnect();
    await server.stop('SIGTERM');
  }
}

/** Commands a Redis has processed so far, by command (INFO commandstats: a Lua script's own calls count too). */
export async function commandstats(redis: Redis): Promise<Map<string, number>> {
  const stats = await redis.info('commandstats');
  return new Map([...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/**
 * Commands per unit (a stamped payment, a job) between two counts, and "47.9 (evalsha 6.0, …)", the
 * most called first; INFO, the counting itself, left out.
 */
export function commandsPer(
  before: Map<string, number>,
  after: Map<string, number>,
  units: number,
): { total: number; line: string } {
  const per = [...after]
    .filter(([name]) => name !== 'info')
    .map(([name, n]) => [name, (n - (before.get(name) ?? 0)) / units] as const);
  const total = per.reduce((sum, [, n]) => sum + n, 0);
  const top = per
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([name, n]) => `${name} ${n.toFixed(1)}`);
  return { total, line: `${total.toFixed(1)} (${top.join(', ')})` };
}
