/**
 * The BullMQ contract between the outbox and the workers, declared once: the queues, and a registry
 * of the jobs on them — name, version and zod schema of the payload. The relay (producer), the
 * processors (consumers) and the API's dashboard all use it. Job ids are stamp keys (`jobIdFor`):
 * adding the same document twice is a no-op.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';

export const STAMP_QUEUE = 'stamp';
export const STAMP_DLQ = 'stamp-dlq';

const outboxJob = z.object({
  /** Payload version: a consumer refuses a version it does not know instead of misreading it. */
  v: z.literal(1).default(1),
  outboxId: z.uuid(),
  stampKey: z.string().min(1),
  /** The invoice's serie-folio, for the people reading the dashboard (never read by a processor). */
  serieFolio: z.string().optional(),
  /** The row's organization (platform mode); absent: the worker's home organization. */
  org: z.uuid().optional(),
  /** Attempts the row had before this job: a `stamp-group` job's first one (its retries go on singly). */
  attemptsBefore: z.number().int().positive().optional(),
});

/** One row of a `stamp-group` job: a single job's fields, and the version its retry's job id needs. */
const groupRow = z.object({
  outboxId: z.uuid(),
  stampKey: z.string().min(1),
  version: z.number().int().positive(),
  serieFolio: z.string().optional(),
});

const stampGroupJob = z.object({
  v: z.literal(1).default(1),
  rows: z.array(groupRow).min(1),
  org: z.uuid().optional(),
});

const deadLetter = z.object({
  v: z.literal(1).default(1),
  outboxId: z.uuid(),
  stampKey: z.string().min(1),
  invoiceId: z.uuid(),
  reason: z.string(),
  /** A worker error code (docs/errors.md, "Worker"), or the PAC's own code. */
  code: z.string(),
  pac: z.string().optional(),
  failedAt: z.string(),
  /** Documents (a refund's Egreso, a Pago) waiting for this invoice to be stamped: blocked with it. */
  waitingDependents: z.number().int().positive().optional(),
  /** The invoice's serie-folio, for the people reading the dashboard. */
  serieFolio: z.string().optional(),
  /** The row's organization (platform mode); absent: the worker's home organization. */
  org: z.uuid().optional(),
});

/**
 * Every job Timbra puts on a queue. `stamp` sends a frozen document; `stamp-group` sends several, one
 * relay claim's (their first attempt: a row that fails goes on as a `stamp` job of its own, so its
 * retries, backoff and dead letter are a single job's); `cancel` requests a cancellation and follows
 * it at the SAT (each carries its outbox rows); `dead-letter` records a job that failed for good (the
 * DLQ is a view: Postgres holds the failure).
 */
export const JOBS = {
  stamp: { queue: STAMP_QUEUE, name: 'stamp', version: 1, data: outboxJob },
  stampGroup: { queue: STAMP_QUEUE, name: 'stamp-group', version: 1, data: stampGroupJob },
  cancel: { queue: STAMP_QUEUE, name: 'cancel', version: 1, data: outboxJob },
  deadLetter: { queue: STAMP_DLQ, name: 'dead-letter', version: 1, data: deadLetter },
} as const;

/**
 * The job id of an outbox row: its stamp key, and for a later version of the document (a correction
 * re-froze it) the key with the version — a job of the earlier version may still sit in the queue's
 * completed set, and BullMQ ignores an add whose id it holds. The PAC's idempotency key stays the
 * stamp key for every version.
 */
export function jobIdFor(stampKey: string, version: number): string {
  return version === 1 ? stampKey : `${stampKey}-v${version}`;
}

/**
 * A new `stamp-group` job's id, one a relay round (and organization). The claim writes it on the rows
 * (`job_group`), so the sweeper finds a row's group. A relay that died between the add and its
 * commit claims those rows again under another id: no add is ignored for an id BullMQ already holds,
 * and a row stamped by both jobs is stamped once (the PAC's idempotency, the stamper's status check).
 */
export function newGroupJobId(): string {
  return `group-${randomUUID()}`;
}

/** The names of the jobs on the stamp queue: an outbox row's kind, or several stamps together. */
export type StampJobName = typeof JOBS.stamp.name | typeof JOBS.cancel.name | typeof JOBS.stampGroup.name;
export type StampJobData = z.input<typeof outboxJob>;
export type StampGroupData = z.input<typeof stampGroupJob>;
/** What the stamp queue's jobs carry: a row (stamp, cancel) or a group of rows. */
export type StampQueueData = StampJobData | StampGroupData;
/** A job of the stamp queue as `parseStampJob` reads it. */
export type ParsedStampJob =
  | { name: typeof JOBS.stamp.name | typeof JOBS.cancel.name; data: z.output<typeof outboxJob> }
  | { name: typeof JOBS.stampGroup.name; data: z.output<typeof stampGroupJob> };
export type DeadLetterData = z.input<typeof deadLetter>;

export class UnknownJobError extends Error {
  readonly code = 'UNKNOWN_JOB';
  constructor(name: string, detail: string) {
    super(`job ${name}: ${detail}`);
    this.name = 'UnknownJobError';
  }
}

/**
 * A job of the stamp queue, checked: its name is one of the registry's and its payload parses.
 * @throws UnknownJobError
 */
export function parseStampJob(name: string, data: unknown): ParsedStampJob {
  if (name === JOBS.stampGroup.name) {
    const parsed = JOBS.stampGroup.data.safeParse(data);
    if (!parsed.success) throw new UnknownJobError(name, z.prettifyError(parsed.error));
    return { name, data: parsed.data };
  }
  if (name !== JOBS.stamp.name && name !== JOBS.cancel.name)
    throw new UnknownJobError(name, 'not a job of the stamp queue');
  const parsed = JOBS[name].data.safeParse(data);
  if (!parsed.success) throw new UnknownJobError(name, z.prettifyError(parsed.error));
  return { name, data: parsed.data };
}
