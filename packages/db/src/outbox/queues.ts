/**
 * The BullMQ contract between the outbox and the workers, declared once: the queues, and a registry
 * of the jobs on them — name, version and zod schema of the payload. The relay (producer), the
 * processors (consumers) and the API's dashboard all use it. Job ids are stamp keys (`jobIdFor`):
 * adding the same document twice is a no-op.
 */
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
 * Every job Timbra puts on a queue. `stamp` sends a frozen document; `cancel` requests a cancellation
 * and follows it at the SAT (both carry their outbox row); `dead-letter` records a job that failed
 * for good (the DLQ is a view: Postgres holds the failure).
 */
export const JOBS = {
  stamp: { queue: STAMP_QUEUE, name: 'stamp', version: 1, data: outboxJob },
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

/** The names of the jobs on the stamp queue: an outbox row's kind. */
export type StampJobName = typeof JOBS.stamp.name | typeof JOBS.cancel.name;
export type StampJobData = z.input<typeof outboxJob>;
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
export function parseStampJob(name: string, data: unknown): { name: StampJobName; data: z.output<typeof outboxJob> } {
  if (name !== JOBS.stamp.name && name !== JOBS.cancel.name)
    throw new UnknownJobError(name, 'not a job of the stamp queue');
  const parsed = JOBS[name].data.safeParse(data);
  if (!parsed.success) throw new UnknownJobError(name, z.prettifyError(parsed.error));
  return { name, data: parsed.data };
}
