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
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

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
