/**
 * The BullMQ queues between the outbox and the stamp workers, and their job shapes: the worker
 * publishes and consumes them, the API's dashboard shows them. Job ids are stamp keys: adding the
 * same document twice is a no-op.
 */
export const STAMP_QUEUE = 'stamp';
/** The Postgres channel a new or re-driven outbox row is announced on (a hint: the relay also polls). */
export const OUTBOX_CHANNEL = 'timbra_outbox';
export const STAMP_DLQ = 'stamp-dlq';

/**
 * A job of the stamp queue: the outbox row it carries. Its name is the row's kind — `stamp` (send
 * the frozen XML) or `cancel` (request the cancellation, then follow it at the SAT).
 */
export interface StampJobData {
  outboxId: string;
  stampKey: string;
}

export interface DeadLetterData extends StampJobData {
  invoiceId: string;
  reason: string;
  code: string;
  pac?: string;
  failedAt: string;
  /** Documents (a refund's Egreso, a Pago) waiting for this invoice to be stamped: blocked with it. */
  waitingDependents?: number;
}
