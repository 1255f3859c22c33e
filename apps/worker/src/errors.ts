/**
 * The worker's own failure codes: what a dead letter, an outbox row's `last_error`, a PAC-attempt's
 * `code` or a cancel request's `reason` says when the PAC did not say it. Every other code there is the
 * PAC's own (SW `CFDI33xx`/`301`…, Finkok `CA…`) or cfdi-core's (`PAC_*`, see its README).
 * docs/errors.md ("Worker") lists each with what to do; a test fails when the two drift apart.
 */
export const WORKER_ERRORS = {
  NO_XML: 'The outbox row points at an invoice without frozen XML (it was never frozen): dead-lettered.',
  CIRCUIT_OPEN: 'The PAC was skipped: its circuit breaker is open after repeated failures (a transient outcome).',
  NOT_SENT:
    'A PAC call recorded ahead with the job’s load was not made after all (a PAC’s circuit moved between the load and the call): closed as transient.',
  NO_PAC: 'No PAC is configured to stamp with.',
  NO_CSD: 'A cancellation could not be signed: the worker has no CSD configured.',
  UNKNOWN_JOB: 'A job on the stamp queue with an unknown name or a payload that does not parse: failed, not retried.',
  SAT_UUID_NOT_FOUND: 'The SAT still did not know the UUID (code 205) at the last attempt to cancel it.',
  PAC_CANCEL_REFUSED: 'The PAC answered a cancellation with a code other than 201/202/205.',
  RECEPTOR_REJECTED: 'The receptor rejected the cancellation (Solicitud rechazada); the invoice stays stamped.',
} as const;

export type WorkerErrorCode = keyof typeof WORKER_ERRORS;

/** `CODE: detail`, as rows and requests store a failure (CODE: a WorkerErrorCode, or the PAC's own). */
export function failureText(code: string, detail: string): string {
  return `${code}: ${detail}`.slice(0, 2000);
}
