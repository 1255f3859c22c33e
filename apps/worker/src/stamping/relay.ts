import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { leanDb, type PrismaClient } from '@timbra/db';
import { claimOutboxBatch, claimOutboxShare, JOBS, jobIdFor, type OutboxShare } from '@timbra/db/outbox';
import { stampJobOptions, type RetryPolicy, type StampJobData } from './jobs.ts';
import { runOnNotify } from './notify-loop.ts';

export interface RelayDeps {
  prisma: PrismaClient;
  queue: Queue<StampJobData>;
  retry: RetryPolicy;
  batchSize: number;
  logger: Logger;
  /** The organization `prisma` works for, written on each job (platform mode; absent: the home one). */
  organizationId?: string;
  /** The organization's share of the stamp queue (absent: no limit): see `claimOutboxShare`. */
  share?: OutboxShare;
}

/**
 * Publishes pending outbox rows to BullMQ. Claims a batch — FOR UPDATE SKIP LOCKED (several relays
 * never claim the same row), marked `enqueued` by the same statement — adds the jobs (jobId = stamp
 * key, per version: jobIdFor), then commits. A crash after the add and before the commit leaves the
 * rows pending: the next claim adds the same job ids again, which BullMQ ignores. Never walks an id
 * cursor (ids commit out of order): it asks for what is pending now.
 */
export class Relay {
  /** The last round found the organization's share of the queue full, with rows still pending. */
  capped = false;

  constructor(private readonly deps: RelayDeps) {}

  /**
   * One claim-publish-commit round (three round trips: BEGIN, the claim, COMMIT; the add between);
   * returns how many rows it published.
   */
  async drainOnce(): Promise<number> {
    // On the lean runner: a round per payment at a steady rate, so Prisma's per-statement cost was
    // most of the relay's CPU (@timbra/db lean.ts).
    return leanDb(this.deps.prisma).transaction(async (tx) => {
      const { share } = this.deps;
      let rows;
      if (share) ({ rows, capped: this.capped } = await claimOutboxShare(tx, this.deps.batchSize, share));
      else rows = await claimOutboxBatch(tx, this.deps.batchSize);
      if (rows.length === 0) return 0;
      await this.deps.queue.addBulk(
        rows.map((r) => ({
          // `stamp` or `cancel` (JOBS in @timbra/db): the worker dispatches on it.
          name: JOBS[r.kind].name,
          data: {
            v: JOBS[r.kind].version,
            outboxId: r.id,
            stampKey: r.stampKey,
            serieFolio: r.serieFolio,
            ...(this.deps.organizationId ? { org: this.deps.organizationId } : {}),
          },
          opts: stampJobOptions(this.deps.retry, jobIdFor(r.stampKey, r.version)),
        })),
      );
      return rows.length;
    });
  }

  /**
   * Drains what is pending: rounds until one claims less than a full batch (nothing more was due
   * when it looked). A row that commits after that look announces itself with a NOTIFY, which
   * starts another drain (runOnNotify); an empty round per drain — a transaction per payment at a
   * steady rate — is not needed.
   */
  async drainAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.drainOnce();
      total += n;
      if (n < this.deps.batchSize) return total;
    }
  }
}

/**
 * Runs a relay: drains on every NOTIFY (a hint only) and every `pollMs` as the fallback. `stop()`
 * ends the loop and waits for the round in progress.
 */
export function runRelay(
  relay: { drainAll(named?: ReadonlySet<string>): Promise<number>; readonly capped: boolean },
  options: { databaseUrl: string; pollMs: number; logger: Logger },
) {
  // While a share is full, the queue drains without a NOTIFY: the relay looks again every 100 ms.
  // A round woken by NOTIFYs drains the organizations they name (platform mode: AcrossOrganizations).
  return runOnNotify((named) => relay.drainAll(named), {
    ...options,
    what: 'relay',
    soon: () => relay.capped,
    soonMs: 100,
  });
}
