/**
 * The invoice state machine. This table is the rule; the database enforces the same one (the
 * `invoice_status_transitions` table and the trigger `invoices_status_guard`, migration
 * 20261205000000 — a test fails when the two differ), so no write can make an illegal move. Every
 * status write in this package names the statuses it moves from through `statusGuard`, which checks
 * them against this table when the module loads.
 *
 *   waiting ──(related invoice stamped, frozen)──▶ pending        (Egreso / Pago: needs the original's UUID)
 *   needs_data ──(data fixed, frozen)──▶ pending ──(stamped)──▶ stamped ──▶ cancel_requested ──▶ cancelled
 *                                          │  ▲                               │
 *                               (dead-letter) (re-drive)          (rejected) ◀┘ back to stamped
 *                                          ▼  │
 *                                       stamp_failed
 */
import { Prisma } from '../generated/client.ts';
import type { InvoiceStatus } from '../generated/enums.ts';

export type { InvoiceStatus };

export const INVOICE_STATUSES = [
  'waiting',
  'needs_data',
  'pending',
  'stamped',
  'stamp_failed',
  'cancel_requested',
  'cancelled',
] as const satisfies readonly InvoiceStatus[];

/** The statuses an invoice may be written in. */
export const INITIAL_STATUSES: readonly InvoiceStatus[] = ['waiting', 'needs_data', 'pending'];

export const TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = {
  waiting: ['pending', 'needs_data'],
  needs_data: ['pending'],
  pending: ['stamped', 'stamp_failed'],
  stamp_failed: ['pending', 'stamped'],
  stamped: ['cancel_requested'],
  cancel_requested: ['cancelled', 'stamped'],
  cancelled: [],
};

export class InvalidTransitionError extends Error {
  readonly code = 'INVALID_TRANSITION';
  constructor(
    readonly from: InvoiceStatus | null,
    readonly to: InvoiceStatus,
  ) {
    super(from ? `an invoice cannot go from ${from} to ${to}` : `an invoice cannot be written as ${to}`);
    this.name = 'InvalidTransitionError';
  }
}

export function canTransition(from: InvoiceStatus, to: InvoiceStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** @throws InvalidTransitionError */
export function assertTransition(from: InvoiceStatus, to: InvoiceStatus): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}

/**
 * The guard of a status write: `status IN (from…)` as SQL, for an UPDATE that sets `to`. Checked
 * against the table when called (at module load for the writes below): a write whose guard admits
 * an illegal move does not load.
 *
 * @throws InvalidTransitionError
 */
export function statusGuard(from: readonly InvoiceStatus[], to: InvoiceStatus): Prisma.Sql {
  for (const f of from) assertTransition(f, to);
  return Prisma.sql`status IN (${Prisma.join(from.map((f) => Prisma.sql`${f}::invoice_status`))})`;
}
