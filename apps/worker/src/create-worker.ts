import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Csd, OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { replacementsAwaitingCancellation, requestReplacedCancellation } from '@timbra/db/invoices';
import { parseStampJob, settleDeadLetters, type LetterOwner, type OutboxShare } from '@timbra/db/outbox';
import { bullmqErrorListener, type RedisConnection } from '@timbra/db/redis';
import { failureText } from './errors.ts';
import { freezeDependents, freezeOverdueDependents } from './invoices/freeze-dependents.ts';
import {
  backoffDelay,
  STAMP_DLQ,
  STAMP_QUEUE,
  type DeadLetterData,
  type RetryPolicy,
  type StampJobData,
} from './stamping/jobs.ts';
import type { AttemptRecord, PacChain } from './stamping/pac-chain.ts';
import { createCancelProcessor, type CsdCredentials } from './invoices/cancel-processor.ts';
import { Relay } from './stamping/relay.ts';
import { createStampProcessor } from './stamping/stamp-processor.ts';
import { stampWrites } from './stamping/stamp-writes.ts';
import { Sweeper } from './stamping/sweeper.ts';
import { CorrectionRunner } from './invoices/corrections.ts';
import { createDeadLetterConsumer } from './stamping/dead-letters.ts';
import { AcrossOrganizations } from './organizations/across.ts';

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
   * Platform mode: the organization `prisma` works for (the home one), and how the others' clients
   * and CSDs are opened, for their jobs and rows (organizations/across.ts). Absent: the home
   * organization alone. Corrections run for the home organization only.
   */
  organizations?: {
    home: string;
    open: (organizationId: string) => Promise<{ prisma: PrismaClient; csd?: Csd; csdCredentials?: CsdCredentials }>;
    ids: () => Promise<string[]>;
    pending: () => Promise<string[]>;
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
  const home = organizationParts(deps, queue, dlq);
  const across = deps.organizations
    ? new AcrossOrganizations({
        home: { id: deps.organizations.home, parts: home },
        build: async (id) => {
          // Its own client and CSD only: never the home organization's.
          const { csd: _csd, csdCredentials: _credentials, ...shared } = deps;
          return organizationParts({ ...shared, ...(await deps.organizations!.open(id)) }, queue, dlq, id);
        },
        ids: deps.organizations.ids,
        pending: deps.organizations.pending,
        batchSize: deps.relayBatchSize,
        logger: deps.logger,
      })
    : undefined;
  const partsOf = (organization: string | undefined) => (across ? across.partsOf(organization) : Promise.resolve(home));
  const corrections = createCorrections(deps);
  const worker = new Worker<StampJobData>(STAMP_QUEUE, jobHandler(partsOf), {
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
    corrections,
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

function assertNever(name: never): never {
  throw new UnrecoverableError(failureText('UNKNOWN_JOB', `no processor for ${String(name)}`));
}

/** One organization's relay, sweeper and processors, on its client and with its CSD. */
function organizationParts(
  deps: WorkerDeps,
  queue: Queue<StampJobData>,
  dlq: Queue<DeadLetterData>,
  organizationId?: string,
) {
  const { prisma, csd } = deps;
  const org = organizationId ? { organizationId } : {};
  const relay = new Relay({
    prisma,
    queue,
    retry: deps.retry,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
    ...org,
    ...(deps.relayShare ? { share: deps.relayShare } : {}),
  });
  const stamp = createStampProcessor({
    prisma,
    writes: stampWrites(prisma),
    chain: deps.chain,
    dlq,
    logger: deps.logger,
    alert: deps.alert ?? (() => undefined),
    ...org,
    ...(deps.onAttempts ? { onAttempts: deps.onAttempts } : {}),
    ...(csd
      ? { freezeDependents: (invoiceId: string) => freezeDependents(prisma, csd, invoiceId, deps.catalogs) }
      : {}),
    cancelReplaced: (replacementId: string) => requestReplacedCancellation(prisma, replacementId),
  });
  const cancel = deps.csdCredentials
    ? createCancelProcessor({
        prisma,
        chain: deps.chain,
        csd: deps.csdCredentials,
        logger: deps.logger,
        poll: deps.cancelPoll ?? { baseMs: 5_000, maxMs: 3_600_000 },
        ...(deps.onCancellation ? { onOutcome: deps.onCancellation } : {}),
      })
    : undefined;
  const owner = { organization: organizationId ?? deps.organizations?.home ?? '', home: !organizationId };
  return { prisma, relay, stamp, cancel, sweeper: createSweeper(deps, queue, dlq, owner) };
}

/** The sweeper: enqueued rows Redis lost, overdue dependents, dead letters and replacements settled. */
function createSweeper(
  deps: WorkerDeps,
  queue: Queue<StampJobData>,
  dlq: Queue<DeadLetterData>,
  owner: LetterOwner,
): Sweeper {
  const csd = deps.csd;
  return new Sweeper({
    prisma: deps.prisma,
    queue,
    staleMs: deps.sweeperStaleMs ?? 5 * 60_000,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
    ...(csd ? { freezeOverdue: () => freezeOverdueDependents(deps.prisma, csd, deps.catalogs) } : {}),
    // Only its organization's letters: another's row is out of this client's sight, not gone.
    settleDeadLetters: () => settleDeadLetters(deps.prisma, dlq, undefined, deps.organizations ? owner : undefined),
    cancelReplaced: async () => {
      let n = 0;
      for (const id of await replacementsAwaitingCancellation(deps.prisma, deps.relayBatchSize))
        if ((await requestReplacedCancellation(deps.prisma, id)).requested) n++;
      return n;
    },
  });
}

/** The corrections' runner (they freeze a new version: only with a CSD). */
function createCorrections(deps: WorkerDeps): CorrectionRunner | undefined {
  const csd = deps.csd;
  return csd
    ? new CorrectionRunner({
        prisma: deps.prisma,
        chain: deps.chain,
        csd,
        ...(deps.catalogs ? { catalogs: deps.catalogs } : {}),
        logger: deps.logger,
        inFlightGraceMs: deps.corrections?.inFlightGraceMs ?? 120_000,
        retry: deps.corrections?.retry ?? { baseMs: 5_000, maxMs: 600_000 },
        batchSize: deps.relayBatchSize,
        ...(deps.corrections?.autoRefreezeLateMarginMs !== undefined
          ? { autoRefreezeLateMarginMs: deps.corrections.autoRefreezeLateMarginMs }
          : {}),
      })
    : undefined;
}

/** What the worker does with a job of the stamp queue: stamp, or cancel, for the job's organization (a job it cannot read fails now). */
function jobHandler(partsOf: (organization: string | undefined) => Promise<ReturnType<typeof organizationParts>>) {
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
