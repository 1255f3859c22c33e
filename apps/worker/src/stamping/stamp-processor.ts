import { randomUUID } from 'node:crypto';
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Logger } from 'pino';
import { PacErrorCode } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { deadLetterOutboxRow, JOBS, recordFailedAttempt } from '@timbra/db/outbox';
import { failureText, type WorkerErrorCode } from '../errors.ts';
import type { DeadLetterData, StampJobData } from './jobs.ts';
import { stickyPac, type AttemptRecord, type PacChain } from './pac-chain.ts';
import type { StampWrites } from './stamp-writes.ts';

export interface StampProcessorDeps {
  prisma: PrismaClient;
  /** The load, the write-ahead records and the persisted stamp, batched across concurrent jobs. */
  writes: StampWrites;
  chain: PacChain;
  dlq: Queue<DeadLetterData>;
  logger: Logger;
  /** Freezes the documents waiting for an invoice just stamped (absent: none are handled here). */
  freezeDependents?: (invoiceId: string) => Promise<number>;
  /** Cancels (motivo 01) the invoice a just-stamped replacement replaces. */
  cancelReplaced?: (replacementId: string) => Promise<unknown>;
  /** Receives every job's PAC calls (metrics). */
  onAttempts?: (attempts: readonly AttemptRecord[]) => void;
  /** Called with every dead letter (logs an alert; optionally POSTs it). */
  alert: (letter: DeadLetterData) => Promise<void> | void;
  /** The organization `prisma` works for, written on its dead letters (platform mode; absent: the home one). */
  organizationId?: string;
}

/**
 * Stamps one outbox row. Idempotent by construction: a row already done returns at once; the frozen
 * bytes are sent unchanged with the stamp key as idempotency key, so a repeated job (stalled worker,
 * re-added job) gets the same stamp back from the PAC.
 */
export function createStampProcessor(deps: StampProcessorDeps) {
  return (job: Job<StampJobData>) =>
    stampRow(deps, {
      jobId: job.id,
      outboxId: job.data.outboxId,
      serieFolio: job.data.serieFolio,
      attempt: job.attemptsMade + 1 + (job.data.attemptsBefore ?? 0),
      last: job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
    });
}

/** One attempt at one row: its job's id, the row, which attempt it is and whether it is the last. */
export interface RowAttempt {
  jobId: string | undefined;
  outboxId: string;
  serieFolio?: string | undefined;
  /** From 1, over every job the row had (a group's, then its own). */
  attempt: number;
  last: boolean;
}

/**
 * A row's attempt: stamped (or skipped, when there is nothing to do), dead-lettered (throws
 * UnrecoverableError) or failed for now (throws an Error: to be retried with backoff).
 */
export async function stampRow(deps: StampProcessorDeps, at: RowAttempt) {
  const { logger } = deps;
  // The first call's write-ahead record goes with the load (one commit, not two) when the row has
  // no PAC call yet; the chain uses it, or closes it as not sent.
  const firstPac = deps.chain.firstChoice();
  const loaded = await deps.writes.load(at.outboxId, firstPac ? { pac: firstPac, id: randomUUID() } : undefined);
  const row = loaded && { ...loaded, serieFolio: at.serieFolio };
  // `held`: a correction is proving this version was never stamped; it arms the row again after.
  if (!row || row.status === 'done' || row.status === 'failed' || row.status === 'held')
    return { skipped: row?.status ?? 'missing' };
  const log = logger.child({ jobId: at.jobId, stampKey: row.stampKey, invoiceId: row.invoiceId });
  const ids = { outboxId: row.id, invoiceId: row.invoiceId, version: row.version };
  if (!row.frozenXml) {
    await deadLetter(deps, row, 'the invoice has no frozen XML', 'NO_XML' satisfies WorkerErrorCode);
    throw new UnrecoverableError('no frozen XML');
  }
  // Write-ahead: each PAC call is recorded `in_flight` (committed) before it is made, and updated
  // with its outcome after. A worker killed during the call leaves that row: the next attempt
  // stays with that PAC (stickyPac), which may have stamped — a second PAC would stamp again.
  // The record is refused once a correction holds the row: the call is then not made.
  const beforeSend = async (pac: string) => {
    const id = randomUUID();
    if (!(await deps.writes.recordInFlight({ ...ids, pac, id }))) throw new HeldForCorrection();
    return id;
  };
  let chained;
  try {
    chained = await deps.chain.stamp(row.frozenXml, row.stampKey, stickyPac(row.history), beforeSend, row.recordedCall);
  } catch (error) {
    if (!(error instanceof HeldForCorrection)) throw error;
    // Calls this job made before (a failover) keep their `in_flight` record without an outcome:
    // the correction's proof waits out the grace for them, then asks those PACs.
    log.info('held for a correction: not sent');
    return { skipped: 'held' };
  }
  const { result, attempts } = chained;
  deps.onAttempts?.(attempts);
  if (result?.sameDocument) return persistStamp(deps, row, ids, result, attempts, log);
  return recordFailure(deps, at, row, ids, chained, log);
}

type LoadedRow = NonNullable<Awaited<ReturnType<StampProcessorDeps['writes']['load']>>> & { serieFolio?: string };
type Ids = { outboxId: string; invoiceId: string; version: number };
type Chained = Awaited<ReturnType<PacChain['stamp']>>;

/**
 * The stamp of this very document, persisted with the row done and the PAC calls (one statement);
 * then, when documents wait for it, their freezing, and a replacement's original cancelled.
 */
async function persistStamp(
  deps: StampProcessorDeps,
  row: LoadedRow,
  ids: Ids,
  result: NonNullable<Chained['result']>,
  attempts: Chained['attempts'],
  log: Logger,
) {
  const persisted = await deps.writes.persist({ row: ids, stamp: result, calls: attempts });
  if (!persisted.written) {
    // The invoice moved on (stamped by another job, or cancelled): nothing to write.
    log.warn({ uuid: result.uuid }, 'stamp answered for an invoice that is no longer pending');
    return { skipped: 'not_pending', uuid: result.uuid };
  }
  log.info({ uuid: result.uuid, pac: result.pac, recovered: result.recovered }, 'stamped');
  // A follow-up step, idempotent on its own, only when documents wait for this one: the statement
  // above looked once it held the invoice's lock, so it saw those written while it waited for a
  // dependent's share lock too. If the worker dies here, the sweeper does it.
  const dependents =
    persisted.dependentsWaiting && deps.freezeDependents ? await deps.freezeDependents(row.invoiceId) : 0;
  if (dependents > 0) log.info({ dependents }, 'dependent documents frozen');
  // Likewise: the replaced invoice's cancellation (the sweeper's net catches a crash here).
  if (persisted.replaces && deps.cancelReplaced) {
    const outcome = await deps.cancelReplaced(row.invoiceId);
    log.info({ outcome }, 'replacement stamped: the replaced invoice’s cancellation (motivo 01)');
  }
  return { uuid: result.uuid, pac: result.pac, recovered: result.recovered, dependents };
}

/**
 * A failed attempt recorded (its PAC calls and the error); dead-lettered when the PAC holds another
 * document's stamp for this key, when the failure is permanent or on the last attempt; else thrown
 * for BullMQ to retry with backoff.
 */
async function recordFailure(
  deps: StampProcessorDeps,
  at: RowAttempt,
  row: LoadedRow,
  ids: Ids,
  { result, error, attempts }: Chained,
  log: Logger,
): Promise<never> {
  await recordFailedAttempt(
    deps.prisma,
    ids,
    attempts,
    error
      ? failureText(error.pacCode, `${error.pac}: ${error.message}`)
      : failureText(PacErrorCode.ForeignStamp, 'foreign stamp'),
  );
  if (result && !result.sameDocument) {
    // The PAC holds a stamp for this key that belongs to another document: never recorded as this
    // invoice's stamp automatically. Its UUID is in pac_attempts for reconciliation.
    await deadLetter(
      deps,
      row,
      `the PAC holds stamp ${result.uuid} of another document for this key`,
      PacErrorCode.ForeignStamp,
      result.pac,
    );
    throw new UnrecoverableError('foreign stamp');
  }
  const failure = error!;
  if (failure.outcome === 'permanent' || at.last) {
    // Postgres first: it is the record; the DLQ queue is the view.
    await deadLetter(deps, row, failure.message, failure.pacCode, failure.pac);
    throw new UnrecoverableError(`${failure.pacCode}: ${failure.message}`);
  }
  log.warn(
    { outcome: failure.outcome, code: failure.pacCode, pac: failure.pac, attempt: at.attempt },
    'stamp attempt failed; will retry',
  );
  throw new Error(`${failure.outcome}: ${failure.pacCode}`);
}

/** A correction took the row out of circulation between the load and a PAC call. */
class HeldForCorrection extends Error {
  constructor() {
    super('held for a correction');
    this.name = 'HeldForCorrection';
  }
}

async function deadLetter(
  deps: StampProcessorDeps,
  row: { id: string; stampKey: string; invoiceId: string; serieFolio?: string | undefined },
  reason: string,
  // A WorkerErrorCode, or the PAC's own code.
  code: string,
  pac?: string,
): Promise<void> {
  const deadLettered = await deadLetterOutboxRow(
    deps.prisma,
    { outboxId: row.id, invoiceId: row.invoiceId },
    failureText(code, reason),
  );
  if (deadLettered === undefined) {
    // A correction holds the row (it is proving the version was never stamped): not a dead letter.
    deps.logger.info({ invoiceId: row.invoiceId, code }, 'failure on a row held for a correction: left to it');
    return;
  }
  const letter: DeadLetterData = {
    v: JOBS.deadLetter.version,
    outboxId: row.id,
    stampKey: row.stampKey,
    invoiceId: row.invoiceId,
    ...(row.serieFolio ? { serieFolio: row.serieFolio } : {}),
    reason,
    code,
    ...(pac ? { pac } : {}),
    failedAt: deadLettered.failedAt.toISOString(),
    ...(deadLettered.waitingDependents > 0 ? { waitingDependents: deadLettered.waitingDependents } : {}),
    ...(deps.organizationId ? { org: deps.organizationId } : {}),
  };
  await deps.dlq.add(JOBS.deadLetter.name, letter, {
    jobId: `${row.stampKey}-${Date.now()}`,
    // Failed (dead) letters stay until settled; settled ones are kept a month for the record.
    removeOnComplete: { age: 30 * 24 * 3600 },
    removeOnFail: false,
    // The letter's failure is the PAC's words, not a stack of ours.
    stackTraceLimit: 0,
  });
  deps.logger.error({ alert: 'stamp_dead_letter', ...letter }, 'invoice dead-lettered');
  await deps.alert(letter);
}
