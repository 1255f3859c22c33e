/**
 * What the use cases refuse, as domain errors with stable codes: they say what went wrong, never an
 * HTTP status. The HTTP layer maps each code to its status and documented message (errors.ts).
 */
export const DOMAIN_ERROR_CODES = [
  'not_found',
  'payment_not_found_yet',
  'refund_conflict',
  'refund_exceeds_payment',
  'not_installments',
  'installment_conflict',
  'installment_exceeds_balance',
  'not_cancellable',
  'validation_failed',
  'occurred_in_future',
  'not_correctable',
  'correction_in_progress',
  'not_replaceable',
  'invoice_cancelled',
  'lines_total_mismatch',
  'product_not_found',
  'customer_not_found',
  'exchange_rate_unavailable',
  'exchange_rate_out_of_range',
  'exchange_rate_source_down',
  'ticket_not_found',
  'ticket_already_invoiced',
  'ticket_in_global',
  'ticket_refunded',
  'global_mode_off',
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

/** How far ahead of our clock a business event's time may be (clocks differ): 5 minutes. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The rule for business times (a payment's, a refund's, an installment's): not in the future beyond
 * the clock skew. An old time is fine — the CFDI's Fecha is the issue time, not this one.
 * @throws DomainError occurred_in_future
 */
export function assertNotInFuture(path: string, at: Date, now = Date.now()): void {
  if (Number.isNaN(at.getTime()) || at.getTime() > now + MAX_CLOCK_SKEW_MS)
    throw new DomainError('occurred_in_future', undefined, [
      { path, message: `${Number.isNaN(at.getTime()) ? 'not a time' : at.toISOString()} is in the future` },
    ]);
}

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    /** Overrides the code's documented message. */
    message?: string,
    /** Which fields, and why (`[{ path, message }]`). */
    readonly details?: unknown,
  ) {
    super(message ?? code);
    this.name = 'DomainError';
    this.hasOwnMessage = message !== undefined;
  }
  readonly hasOwnMessage: boolean;
}
