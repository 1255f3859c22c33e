import { RequestError, TimeoutError } from 'got';
import { classifyPacFailure, type PacFailure } from './classify.ts';
import { PacError } from './pac-errors.ts';

/** Timeouts of a PAC client, in milliseconds. */
export interface PacTimeouts {
  /** TCP (and TLS) connection. Default 5 000. */
  connectMs: number;
  /** From the request being written to the first byte of the answer. Default 30 000. */
  responseMs: number;
}

export const DEFAULT_TIMEOUTS: PacTimeouts = { connectMs: 5_000, responseMs: 30_000 };

/** got options every PAC client uses: explicit timeouts, no got retries (the queue owns retries). */
export function gotOptions(timeouts: PacTimeouts) {
  return {
    timeout: {
      lookup: timeouts.connectMs,
      connect: timeouts.connectMs,
      secureConnect: timeouts.connectMs,
      send: timeouts.responseMs,
      response: timeouts.responseMs,
    },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
  } as const;
}

/** Turns a got transport error into the classifier's input. */
export function networkFailure(error: unknown): PacFailure {
  if (error instanceof TimeoutError) {
    return { type: 'network', code: 'ETIMEDOUT', sent: error.timings.upload !== undefined, timeoutPhase: error.event };
  }
  if (error instanceof RequestError) {
    // `timings.upload` is set once the request body was fully written to the socket.
    return { type: 'network', code: error.code, sent: error.timings?.upload !== undefined };
  }
  return { type: 'network', code: 'EUNKNOWN', sent: true };
}

/** Builds the PacError for a classified failure (never for stamped/already-stamped outcomes). */
export function failureError(pac: string, failure: PacFailure, message: string, cause?: unknown): PacError {
  const c = classifyPacFailure(failure);
  const outcome = c.outcome === 'stamped' || c.outcome === 'already_stamped' ? 'ambiguous' : c.outcome;
  return new PacError({
    outcome,
    pacCode: c.code,
    pac,
    message: `${message} (${c.reason})`,
    ...(failure.type === 'http' || failure.type === 'unreadable' ? { httpStatus: failure.status } : {}),
    cause,
  });
}
