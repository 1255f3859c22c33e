import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { leanDb, type PrismaClient } from '@timbra/db';
import type { SeveralOrganizations } from '@timbra/db/organizations';
import {
  claimOutboxAcross,
  claimOutboxBatch,
  claimOutboxShare,
  JOBS,
  jobIdFor,
  newGroupJobId,
  type ClaimedOutboxRow,
  type OutboxShare,
  type StampQueueData,
} from '@timbra/db/outbox';
import { stampJobOptions, type RetryPolicy } from './jobs.ts';
import { runOnNotify } from './notify-loop.ts';

export interface RelayDeps {
  prisma: PrismaClient;
  queue: Queue<StampQueueData>;
  retry: RetryPolicy;
  batchSize: number;
  /** A claim's stamp rows go out as one `stamp-group` job (STAMP_JOB_GROUPS); else a job each. */
  groups?: boolean;
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
      const group = this.deps.groups ? newGroupJobId() : undefined;
      let rows;
      if (share) ({ rows, capped: this.capped } = await claimOutboxShare(tx, this.deps.batchSize, share, group));
      else rows = await claimOutboxBatch(tx, this.deps.batchSize, group);
      if (rows.length === 0) return 0;
      await this.deps.queue.addBulk(jobsOf(rows, this.deps.retry, this.deps.organizationId, group));
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
 * A claim's jobs, in its order: with `group`, its stamp rows in one `stamp-group` job (where the
 * first of them stood); each other row a job of its own (`stamp` or `cancel`: JOBS in @timbra/db).
 */
function jobsOf(
  rows: readonly ClaimedOutboxRow[],
  retry: RetryPolicy,
  organizationId: string | undefined,
  group: string | undefined,
) {
  if (!group) return rows.map((r) => jobOf(r, retry, organizationId));
  const stamps = rows.filter((r) => r.kind === 'stamp');
  const jobs = [];
  for (const r of rows)
    if (r.kind !== 'stamp') jobs.push(jobOf(r, retry, organizationId));
    else if (r === stamps[0]) jobs.push(groupJobOf(stamps, retry, organizationId, group));
  return jobs;
}

function groupJobOf(
  rows: readonly ClaimedOutboxRow[],
  retry: RetryPolicy,
  organizationId: string | undefined,
  group: string,
) {
  return {
    name: JOBS.stampGroup.name,
    data: {
      v: JOBS.stampGroup.version,
      rows: rows.map((r) => ({ outboxId: r.id, stampKey: r.stampKey, version: r.version, serieFolio: r.serieFolio })),
      ...(organizationId ? { org: organizationId } : {}),
    },
    // A job's options: the group fails as a whole only when its rows' hand-over cannot be added.
    opts: stampJobOptions(retry, group),
  };
}

/** A claimed row's job of its own. */
function jobOf(r: ClaimedOutboxRow, retry: RetryPolicy, organizationId: string | undefined) {
  return {
    name: JOBS[r.kind].name,
    data: {
      v: JOBS[r.kind].version,
      outboxId: r.id,
      stampKey: r.stampKey,
      serieFolio: r.serieFolio,
      ...(organizationId ? { org: organizationId } : {}),
    },
    opts: stampJobOptions(retry, jobIdFor(r.stampKey, r.version)),
  };
}

export interface RelayAcrossDeps extends Omit<RelayDeps, 'prisma' | 'organizationId'> {
  across: SeveralOrganizations;
}

/** What a round across organizations did for one of them. */
export interface RelayedOf {
  organizationId: string;
  published: number;
  /** Its share of the queue is full and more may be pending. */
  capped: boolean;
}

/**
 * Platform mode's relay round for several organizations at once: one claim-publish-commit, as
 * `Relay.drainOnce`, on a transaction naming them all (`claimOutboxAcross`: each one's due rows
 * within its share). Spread over many organizations, a round an organization published one row.
 * The jobs go to the queue taking each organization's first job, then each one's second, and so
 * on: one organization's batch does not go in front of another's single row (with groups, each
 * organization's stamps are one job; the stamper shares its slots among organizations: FairSlots).
 */
export class RelayAcross {
  constructor(private readonly deps: RelayAcrossDeps) {}

  drainOnce(organizationIds: readonly string[]): Promise<RelayedOf[]> {
    const { batchSize, share, retry } = this.deps;
    const groups = new Map<string, string>();
    const groupOf = (organizationId: string) => {
      if (!groups.has(organizationId)) groups.set(organizationId, newGroupJobId());
      return groups.get(organizationId)!;
    };
    return this.deps.across.run(organizationIds, (db) =>
      db.transaction(
        async (tx) => {
          const claimed = await claimOutboxAcross(
            tx,
            organizationIds,
            batchSize,
            share,
            this.deps.groups ? groupOf : undefined,
          );
          const each = claimed.map(({ organizationId, rows }) =>
            jobsOf(rows, retry, organizationId, this.deps.groups ? groupOf(organizationId) : undefined),
          );
          const jobs = [];
          for (let i = 0; i < batchSize; i++) for (const mine of each) if (mine[i]) jobs.push(mine[i]!);
          if (jobs.length > 0) await this.deps.queue.addBulk(jobs);
          return claimed.map((c) => ({ organizationId: c.organizationId, published: c.rows.length, capped: c.capped }));
          // Postgres planned the claim afresh at each round (77% of its time at a steady 100/s).
        },
        { planOnce: true },
      ),
    );
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
