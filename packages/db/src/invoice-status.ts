/**
 * The invoice state machine, enforced in one place. Every status change goes through
 * `assertTransition`; the database CHECK lists the same statuses.
 *
 *   waiting ──(related invoice stamped, frozen)──▶ pending        (Egreso / Pago: needs the original's UUID)
 *   needs_data ──(data fixed, frozen)──▶ pending ──(stamped)──▶ stamped ──▶ cancel_requested ──▶ cancelled
 *                                          │  ▲                               │
 *                               (dead-letter) (re-drive)          (rejected) ◀┘ back to stamped
 *                                          ▼  │
 *                                       stamp_failed
 */
export const INVOICE_STATUSES = [
  'waiting',
  'needs_data',
  'pending',
  'stamped',
  'stamp_failed',
  'cancel_requested',
  'cancelled',
] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

const TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = {
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
    readonly from: InvoiceStatus,
    readonly to: InvoiceStatus,
  ) {
    super(`an invoice cannot go from ${from} to ${to}`);
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
