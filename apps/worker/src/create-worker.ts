import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Csd, OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import type { SeveralOrganizations } from '@timbra/db/organizations';
import { parseStampJob, type OutboxShare } from '@timbra/db/outbox';
import { bullmqErrorListener, type RedisConnection } from '@timbra/db/redis';
import { failureText } from './errors.ts';
import {
  backoffDelay,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type RetryPolicy,
  type StampJobData,
} from './stamping/jobs.ts';
import type { AttemptRecord, PacChain } from './stamping/pac-chain.ts';
import { stampWritesAcross } from './stamping/stamp-writes.ts';
import { RelayAcross } from './stamping/relay.ts';
import type { CsdCredentials } from './invoices/cancel-processor.ts';
import { createDeadLetterConsumer } from './stamping/dead-letters.ts';
import { AcrossOrganizations, type EachOrganization, type OrganizationVisit } from './organizations/across.ts';
import { correctionsAcross, organizationParts, type OrganizationPartsOf } from './organizations/parts.ts';

export interface WorkerDeps {
  prisma: PrismaClient;
  /** A connection with `maxRetriesPerRequest: null` (BullMQ workers require it). */
  redis: RedisConnection;
  /** BullMQ key prefix; for Redis Cluster use a `{hash-tag}` so a queue's keys share a slot. */
  prefix: string;
  chain: PacChain;
  retry: RetryPolicy;
  concurrency: number;
  relayBatchSize: number;
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
  const queue = new Queue<StampJobData>(STAMP_QUEUE, { connection, prefix: deps.prefix });
  const dlq = new Queue<DeadLetterData>(STAMP_DLQ, { connection, prefix: deps.prefix });
  for (const q of [queue, dlq])
    q.on('error', bullmqErrorListener(deps.logger, 'queue error', 'warn', { queue: q.name }));
  const writesAcross = deps.across ? stampWritesAcross(deps.across) : undefined;
  const relayAcross = deps.across
    ? new RelayAcross({ ...deps, across: deps.across, queue, batchSize: deps.relayBatchSize, share: deps.relayShare })
    : undefined;
  const home = organizationParts(deps, queue, dlq, undefined, writesAcross);
  const across = acrossOrganizationsOf(deps, queue, dlq, home, writesAcross, relayAcross);
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
  const worker = new Worker<StampJobData>(STAMP_QUEUE, jobHandler(jobParts), {
    connection,
    prefix: deps.prefix,
    concurrency: deps.concurrency,
    autorun: options.autorun ?? true,
    lockDuration: deps.lockMs ?? 30_000,
    stalledInterval: Math.max(500, Math.round((deps.lockMs ?? 30_000) / 2)),
    settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(deps.retry, attemptsMade) },
  });
  worker.on('error', bullmqErrorListener(deps.logger, 'worker error', 'error'));
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
  queue: Queue<StampJobData>,
  dlq: Queue<DeadLetterData>,
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
      return organizationParts({ ...shared, ...(await organizations.open(id)) }, queue, dlq, id, writesAcross);
    },
    ids: organizations.ids,
    pending: organizations.pending,
    ...(organizations.refreshMs !== undefined ? { refreshMs: organizations.refreshMs } : {}),
    batchSize: deps.relayBatchSize,
    ...(relayAcross ? { relayAcross: (ids: string[]) => relayAcross.drainOnce(ids) } : {}),
    logger: deps.logger,
  });
}

function assertNever(name: never): never {
  throw new UnrecoverableError(failureText('UNKNOWN_JOB', `no processor for ${String(name)}`));
}

/** What the worker does with a job of the stamp queue: stamp, or cancel, for the job's organization (a job it cannot read fails now). */
function jobHandler(partsOf: (organization: string | undefined) => Promise<OrganizationPartsOf>) {
  return async (job: Job<StampJobData>, token?: string) => {
    let parsed;
    try {
      parsed = parseStampJob(job.name, job.data);
    } catch (error) {
      // A job this worker cannot read fails now: retrying would not make it readable.
      throw new UnrecoverableError(failureText('UNKNOWN_JOB', (error as Error).message));
    }
    const { stamp, cancel } = await partsOf(parsed.data.org);
    switch (parsed.name) {
      case 'stamp':
        return stamp(job);
      case 'cancel':
        if (!cancel) throw new UnrecoverableError(failureText('NO_CSD', 'cancellations cannot be signed'));
        return cancel(job, token);
      default:
        return assertNever(parsed.name);
    }
  };
}
