import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import pg from 'pg';
import { OUTBOX_CHANNEL, type PrismaClient } from '@timbra/db';
import { stampJobOptions, type RetryPolicy, type StampJobData } from './jobs.ts';

export interface RelayDeps {
  prisma: PrismaClient;
  queue: Queue<StampJobData>;
  retry: RetryPolicy;
  batchSize: number;
  logger: Logger;
}

/**
 * Publishes pending outbox rows to BullMQ. Claims a batch with FOR UPDATE SKIP LOCKED (several relays
 * never claim the same row), adds the jobs (jobId = stamp key) and marks the rows `enqueued` in the
 * same transaction. A crash after the add and before the commit leaves the rows pending: the next
 * claim adds the same job ids again, which BullMQ ignores. Never walks an id cursor (ids commit out
 * of order): it asks for what is pending now.
 */
export class Relay {
  constructor(private readonly deps: RelayDeps) {}

  /** One claim-publish-commit round; returns how many rows it published. */
  async drainOnce(): Promise<number> {
    return this.deps.prisma.$transaction(
      async (tx) => {
        const rows = await tx.$queryRaw<{ id: string; stamp_key: string; kind: string }[]>`
          SELECT id, stamp_key, kind FROM outbox
          WHERE status = 'pending' AND available_at <= now()
          ORDER BY available_at
          LIMIT ${this.deps.batchSize}
          FOR UPDATE SKIP LOCKED`;
        if (rows.length === 0) return 0;
        await this.deps.queue.addBulk(
          rows.map((r) => ({
            // `stamp` or `cancel`: the worker's processor dispatches on it.
            name: r.kind,
            data: { outboxId: r.id, stampKey: r.stamp_key },
            opts: stampJobOptions(this.deps.retry, r.stamp_key),
          })),
        );
        const ids = rows.map((r) => r.id);
        await tx.$executeRaw`UPDATE outbox SET status = 'enqueued', enqueued_at = now(), updated_at = now() WHERE id = ANY(${ids}::uuid[])`;
        return rows.length;
      },
      { timeout: 30_000 },
    );
  }

  /** Drains until nothing is pending. */
  async drainAll(): Promise<number> {
    let total = 0;
    for (let n = await this.drainOnce(); n > 0; n = await this.drainOnce()) total += n;
    return total;
  }
}

/**
 * Runs a relay: drains on every NOTIFY (a hint only) and every `pollMs` as the fallback. `stop()`
 * ends the loop and waits for the round in progress.
 */
export function runRelay(relay: Relay, options: { databaseUrl: string; pollMs: number; logger: Logger }) {
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  let wake: (() => void) | undefined;
  // A NOTIFY that lands while a round runs is remembered: the next round starts at once instead of
  // after the poll interval (the round may have claimed before that row committed).
  let notified = false;
  const listener = listenForOutbox(options.databaseUrl, options.logger, () => {
    notified = true;
    wake?.();
  });

  const loop = async () => {
    await listener.ready;
    while (!stopped) {
      notified = false;
      running = relay.drainAll().catch((error: unknown) => options.logger.error({ err: error }, 'relay round failed'));
      await running;
      if (stopped) break;
      if (notified) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.pollMs);
        wake = () => {
          wake = undefined;
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  const done = loop();
  return {
    stop: async () => {
      stopped = true;
      wake?.();
      await done;
      await running;
      await listener.close();
    },
  };
}

/**
 * LISTENs on the outbox channel and calls `onNotify` for each NOTIFY. A lost connection (Postgres
 * restarted, the backend terminated) is re-established with backoff (0.25 s doubling to 10 s); in
 * the meantime the relay polls. After each (re)connect `onNotify` is called once: rows may have
 * committed while nobody listened. `ready` resolves after the first attempt, successful or not.
 */
export function listenForOutbox(databaseUrl: string, logger: Logger, onNotify: () => void) {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let delayMs = 250;
  let lost = false;

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: databaseUrl });
    client = c;
    let dropped = false;
    const drop = (error?: unknown) => {
      if (dropped || closed) return;
      dropped = true;
      if (!lost) logger.warn({ err: error }, 'relay LISTEN connection lost; polling until it is back');
      lost = true;
      c.end().catch(() => undefined);
      retry = setTimeout(() => void connect(), delayMs);
      delayMs = Math.min(delayMs * 2, 10_000);
    };
    c.on('notification', onNotify);
    c.on('error', drop);
    c.on('end', () => drop(new Error('connection ended')));
    try {
      await c.connect();
      await c.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (error) {
      drop(error);
      return;
    }
    if (closed) return;
    delayMs = 250;
    if (lost) logger.info('relay LISTEN connection re-established');
    lost = false;
    onNotify();
  };

  const ready = connect();
  return {
    ready,
    close: async () => {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
