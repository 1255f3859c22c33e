import type { PacOutcome } from './classify.ts';

/** Stable codes of PAC client errors (the PAC's own code is in `pacCode`). */
export const PacErrorCode = {
  /** The PAC or the network failed; `outcome` says whether it may have stamped. */
  Failed: 'PAC_FAILED',
  /** The PAC answered a stamp that belongs to another document than the one sent. */
  ForeignStamp: 'PAC_FOREIGN_STAMP',
  /** A recovery (lookup / `stamped`) found no previous stamp. */
  NotFound: 'PAC_NOT_FOUND',
} as const;
export type PacErrorCode = (typeof PacErrorCode)[keyof typeof PacErrorCode];

/**
 * A failed PAC call. `outcome` is the classifier's verdict (transient / ambiguous / permanent); the
 * worker branches on it. Messages never contain credentials or the document.
 */
export class PacError extends Error {
  readonly code: PacErrorCode;
  readonly outcome: Exclude<PacOutcome, 'stamped' | 'already_stamped'>;
  /** The PAC's or transport's code (`301`, `CFDI3307`, `ECONNREFUSED`, `HTTP503`, `ETIMEDOUT:response`). */
  readonly pacCode: string;
  readonly pac: string;
  readonly httpStatus?: number;

  constructor(init: {
    code?: PacErrorCode;
    outcome: Exclude<PacOutcome, 'stamped' | 'already_stamped'>;
    pacCode: string;
    pac: string;
    message: string;
    httpStatus?: number;
    cause?: unknown;
  }) {
    super(`${init.pac}: ${init.pacCode}: ${init.message}`, { cause: init.cause });
    this.name = 'PacError';
    this.code = init.code ?? PacErrorCode.Failed;
    this.outcome = init.outcome;
    this.pacCode = init.pacCode;
    this.pac = init.pac;
    if (init.httpStatus !== undefined) this.httpStatus = init.httpStatus;
  }
}
