import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Csd, OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import type { SeveralOrganizations } from '@timbra/db/organizations';
import { parseStampJob, type OutboxShare, type StampQueueData } from '@timbra/db/outbox';
import { bullmqErrorListener, type RedisConnection } from '@timbra/db/redis';
import { failureText } from './errors.ts';
import {
  stampBackoff,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type RetryPolicy,
  type StampJobData,
} from './stamping/jobs.ts';
import { FairSlots } from './stamping/fair-slots.ts';
import type { AttemptRecord, PacChain } from './stamping/pac-chain.ts';
import { stampWritesAcross } from './stamping/stamp-writes.ts';
import { RelayAcross } from './stamping/relay.ts';
import type { CsdCredentials } from './invoices/cancel-processor.ts';
import { createDeadLetterConsumer } from './stamping/dead-letters.ts';
import { AcrossOrganizations, type EachOrganization, type OrganizationVisit } from './organizations/across.ts';
import {
  correctionsAcross,
  organizationParts,
  type OrganizationPartsOf,
  type OrganizationQueues,
} from './organizations/parts.ts';

export interface WorkerDeps {
  prisma: PrismaClient;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ workers require it). */
  redis: RedisConnection;
  /** BullMQ key prefix; for Redis Cluster use a `{hash-tag}` so a queue's keys share a slot. */
  prefix: string;
  chain: PacChain;
  retry: RetryPolicy;
  /** PAC calls in flight at once (stamps and cancellations), shared among organizations: FairSlots. */
  concurrency: number;
  relayBatchSize: number;
  /** Each relay claim's stamp rows in one `stamp-group` job (STAMP_JOB_GROUPS). Default: a job each. */
  stampGroups?: boolean;
  /** Each organization's share of the stamp queue (RELAY_MAX_ENQUEUED_PER_ORGANIZATION); absent: none. */
  relayShare?: OutboxShare;
  /** Enqueued rows older than this whose job is gone are re-published. Default 5 minutes. */
  sweeperStaleMs?: number;
  /** BullMQ lock duration (ms): a job whose worker died is picked up again after it. Default 30 s. */
  lockMs?: number;
  logger: Logger;
  alert?: (letter: DeadLetterData) => Promise<void> | void;
  /** The emisor's CSD: freezes dependent documents (Egreso, Pago) once their invoice is stamped. */
  csd?: Csd;
  /** The operator's SAT catalogues, given to the SAT rules of every document this worker freezes. */
  catalogs?: OperatorCatalogs;
  /** Receives every job's PAC calls (metrics). */
  onAttempts?: (attempts: readonly AttemptRecord[]) => void;
  /** Told of each cancellation that reached its end (metrics). */
  onCancellation?: (outcome: 'cancelled' | 'rejected' | 'failed') => void;
  /** The CSD's files and password: cancellation requests are signed with them (absent: cancel jobs fail). */
  csdCredentials?: CsdCredentials;
  /** How often the SAT is asked while a cancellation is in process. Default 5 s doubling to 1 h. */
  cancelPoll?: { baseMs: number; maxMs: number };
  /**
   * Platform mode: statements for several organizations at once (`OrganizationClients.across()`):
   * every organization's stamp writes in shared batches (`stampWritesAcross`) and the relay's rounds
   * in shared claims (`RelayAcross`). Absent, each organization's parts batch and claim their own.
   */
  across?: SeveralOrganizations;
  /**
   * Platform mode: the organization `prisma` works for (the home one), and how the others' clients
   * and CSDs are opened, for their jobs and rows (organizations/across.ts). Absent: the home
   * organization alone.
   */
  organizations?: {
    home: string;
    /** Its client and CSD; and for a test organization the test PAC's chain (it throws without one). */
    open: (
      organizationId: string,
    ) => Promise<{ prisma: PrismaClient; csd?: Csd; csdCredentials?: CsdCredentials; chain?: PacChain }>;
    ids: () => Promise<string[]>;
    pending: () => Promise<string[]>;
    /** The organizations whose corrections are due, or with pending invoices made before `lateBefore`. */
    corrections?: (lateBefore: Date | undefined) => Promise<string[]>;
    /** How long an organization's parts are kept before they are built again (default 5 minutes). */
    refreshMs?: number;
  };
  /** Corrections' proof: the in-flight grace and the retry delays (defaults: 2 min; 5 s doubling to 10 min). */
  corrections?: {
    inFlightGraceMs: number;
    retry: { baseMs: number; maxMs: number };
    /** Re-freeze late invoices on its own (AUTO_REFREEZE_LATE), this long before their Fecha leaves the window. */
    autoRefreezeLateMarginMs?: number;
  };
}

/** Builds the queues, the relay and the stamp worker (not started: `worker.run()` or autorun). */
export function createWorker(deps: WorkerDeps, options: { autorun?: boolean } = {}) {
  const connection = deps.redis;
  const queue = new Queue<StampQueueData>(STAMP_QUEUE, { connection, prefix: deps.prefix });
  const dlq = new Queue<DeadLetterData>(STAMP_DLQ, { connection, prefix: deps.prefix });
  for (const q of [queue, dlq])
    q.on('error', bullmqErrorListener(deps.logger, 'queue error', 'warn', { queue: q.name }));
  const writesAcross = deps.across ? stampWritesAcross(deps.across) : undefined;
  const slots = new FairSlots(deps.concurrency);
  const relayAcross = deps.across
    ? new RelayAcross({
        ...deps,
        across: deps.across,
        queue,
        batchSize: deps.relayBatchSize,
        share: deps.relayShare,
        groups: deps.stampGroups ?? false,
      })
    : undefined;
  const home = organizationParts(deps, { queue, dlq, slots }, undefined, writesAcross);
  const across = acrossOrganizationsOf(deps, { queue, dlq, slots }, home, writesAcross, relayAcross);
  const partsOf = (organization: string | undefined) => (across ? across.partsOf(organization) : Promise.resolve(home));
  const visit = (parts: OrganizationPartsOf, organizationId: string): OrganizationVisit => ({
    organizationId,
    prisma: parts.prisma,
    csd: parts.csd,
  });
  const eachOrganization: EachOrganization = across
    ? (what, duty) => across.each(what, (parts, id) => duty(visit(parts, id)))
    : async (_what, duty) => ({ results: [await duty(visit(home, deps.organizations?.home ?? ''))], failed: 0 });
  // A job's organization is built again at once after a failed build (the rounds wait a while).
  const jobParts = (organization: string | undefined) =>
    across ? across.partsOf(organization, 'build') : Promise.resolve(home);
  const worker = stampWorker(deps, jobHandler(jobParts, slots), options.autorun ?? true);
  const deadLetters = createDeadLetterConsumer(
    {
      prismaFor: async (organization) => (await partsOf(organization)).prisma,
      redis: connection,
      prefix: deps.prefix,
      logger: deps.logger,
    },
    { autorun: options.autorun ?? true },
  );
  return {
    queue,
    dlq,
    /** Platform mode: every organization's pending rows, in turn; else the home organization's. */
    relay: across ?? home.relay,
    sweeper: across ?? home.sweeper,
    /** Every organization's corrections that are due (their own CSD); absent without a CSD and organizations. */
    corrections: correctionsAcross(deps, home, across),
    /** Runs a background duty (the globals' close timer, retention) for every organization in turn. */
    eachOrganization,
    worker,
    /** The consumer of stamp-dlq (dead-letters.ts); runs with `worker`. */
    deadLetters,
    /** The PAC calls in flight (`slots.inFlight`), at most `concurrency`. */
    slots,
    /** Stops taking jobs, lets in-flight ones finish, closes the queues. */
    close: async () => {
      await worker.close();
      await deadLetters.close();
      await queue.close();
      await dlq.close();
    },
  };
}

/**
 * Platform mode's organizations, the home one's parts first and each other's built when first
 * needed; undefined for a worker of one organization.
 */
function acrossOrganizationsOf(
  deps: WorkerDeps,
  queues: OrganizationQueues,
  home: OrganizationPartsOf,
  writesAcross: ReturnType<typeof stampWritesAcross> | undefined,
  relayAcross: RelayAcross | undefined,
): AcrossOrganizations<OrganizationPartsOf> | undefined {
  const organizations = deps.organizations;
  if (!organizations) return undefined;
  return new AcrossOrganizations({
    home: { id: organizations.home, parts: home },
    build: async (id) => {
      // Its own client and CSD only: never the home organization's.
      const { csd: _csd, csdCredentials: _credentials, ...shared } = deps;
      return organizationParts({ ...shared, ...(await organizations.open(id)) }, queues, id, writesAcross);
    },
    ids: organizations.ids,
    pending: organizations.pending,
    ...(organizations.refreshMs !== undefined ? { refreshMs: organizations.refreshMs } : {}),
    batchSize: deps.relayBatchSize,
    ...(relayAcross ? { relayAcross: (ids: string[]) => relayAcross.drainOnce(ids) } : {}),
    logger: deps.logger,
  });
}

function assertNever(job: never): never {
  throw new UnrecoverableError(failureText('UNKNOWN_JOB', `no processor for ${(job as { name: string }).name}`));
}

/** The stamp queue's consumer: `handler` for each job, locks and backoff from `deps`. */
function stampWorker(deps: WorkerDeps, handler: ReturnType<typeof jobHandler>, autorun: boolean) {
  const worker = new Worker<StampQueueData>(STAMP_QUEUE, handler, {
    connection: deps.redis,
    prefix: deps.prefix,
    // With groups, jobs waiting for slots are fetched: an organization's group is not kept out of
    // the slots' turn by others' groups holding every BullMQ slot.
    concurrency: deps.stampGroups ? deps.concurrency * GROUPS_FETCHED_PER_SLOT : deps.concurrency,
    autorun,
    lockDuration: deps.lockMs ?? 30_000,
    stalledInterval: Math.max(500, Math.round((deps.lockMs ?? 30_000) / 2)),
    // A row's retries after its group's attempt continue its doubling (attemptsBefore).
    settings: { backoffStrategy: stampBackoff(deps.retry) },
  });
  worker.on('error', bullmqErrorListener(deps.logger, 'worker error', 'error'));
  return worker;
}

/** BullMQ jobs a stamper fetches per PAC-call slot when jobs carry groups. */
const GROUPS_FETCHED_PER_SLOT = 4;

/**
 * What the worker does with a job of the stamp queue: stamp (a row or a group), or cancel, for the
 * job's organization, each PAC call within the slots (a job it cannot read fails now).
 */
function jobHandler(partsOf: (organization: string | undefined) => Promise<OrganizationPartsOf>, slots: FairSlots) {
  return async (job: Job<StampQueueData>, token?: string) => {
    let parsed;
    try {
      parsed = parseStampJob(job.name, job.data);
    } catch (error) {
      // A job this worker cannot read fails now: retrying would not make it readable.
      throw new UnrecoverableError(failureText('UNKNOWN_JOB', (error as Error).message));
    }
    const { stamp, stampGroup, cancel } = await partsOf(parsed.data.org);
    const turn = parsed.data.org ?? '';
    switch (parsed.name) {
      case 'stamp':
        return slots.run(turn, () => stamp(job as Job<StampJobData>));
      case 'stamp-group':
        return stampGroup(job, parsed.data);
      case 'cancel':
        if (!cancel) throw new UnrecoverableError(failureText('NO_CSD', 'cancellations cannot be signed'));
        return slots.run(turn, () => cancel(job as Job<StampJobData>, token));
      default:
        return assertNever(parsed);
    }
  };
}
