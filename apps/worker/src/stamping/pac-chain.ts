import { PacError, type PacClient, type PacOutcome, type StampResult } from '@timbra/cfdi-core';
import type { WorkerErrorCode } from '../errors.ts';

/** One PAC call, as recorded in `pac_attempts`. */
export interface AttemptRecord {
  /** The id `beforeSend` gave this call (its write-ahead record), if any. */
  id?: string;
  pac: string;
  outcome: PacOutcome;
  uuid?: string;
  code?: string;
  durationMs: number;
}

export interface ChainResult {
  result?: StampResult;
  error?: PacError;
  attempts: AttemptRecord[];
}

/**
 * A circuit breaker per PAC: opens after `threshold` consecutive not-processed failures, lets one
 * probe through after `coolDownMs`, closes on any answer that shows the PAC working.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | undefined;

  constructor(
    private readonly threshold: number,
    private readonly coolDownMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): 'closed' | 'open' | 'half-open' {
    if (this.openedAt === undefined) return 'closed';
    return this.now() - this.openedAt >= this.coolDownMs ? 'half-open' : 'open';
  }

  allows(): boolean {
    return this.state !== 'open';
  }

  succeeded(): void {
    this.failures = 0;
    this.openedAt = undefined;
  }

  failedNotProcessed(): void {
    this.failures++;
    if (this.failures >= this.threshold || this.openedAt !== undefined) this.openedAt = this.now();
  }
}

/**
 * The PACs in priority order. The failover rule: move to the next PAC only when the failure proves
 * the document was not processed (transient: refused, DNS, 503/429, circuit open). After an ambiguous
 * failure the document stays with the PAC that may hold its stamp (`sticky`) until that PAC answers:
 * a PAC dedupes only what it stamped itself, so a second PAC would issue a second valid UUID.
 */
export class PacChain {
  readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly pacs: readonly PacClient[],
    options: { threshold: number; coolDownMs: number; now?: () => number },
  ) {
    for (const pac of pacs)
      this.breakers.set(pac.name, new CircuitBreaker(options.threshold, options.coolDownMs, options.now));
  }

  get names(): string[] {
    return this.pacs.map((p) => p.name);
  }

  /** The PAC called `name` (e.g. the one that stamped a document), else the first one. */
  client(name?: string | null): PacClient {
    const pac = this.pacs.find((p) => p.name === name) ?? this.pacs[0];
    if (!pac) throw new Error('no PAC configured');
    return pac;
  }

  /**
   * The PAC a document nothing pins (no sticky PAC) would be sent to first: the first whose circuit
   * lets calls through. The stamper records that call with its load (@timbra/db `loadStampRows`).
   */
  firstChoice(): string | undefined {
    return this.pacs.find((p) => this.breakers.get(p.name)!.allows())?.name;
  }

  /** Sends the same frozen bytes to each eligible PAC in turn until one answers. */
  async stamp(
    frozenXml: string,
    stampKey: string,
    sticky?: string,
    /**
     * Called before each PAC call, and awaited: the caller records that the call is about to be made
     * (so a worker that dies during it leaves a trace — see stickyPac) and returns that record's id.
     */
    beforeSend?: (pac: string) => Promise<string>,
    /**
     * A call already recorded `in_flight` (from `firstChoice`, with the load): its record is used
     * for that PAC's call instead of `beforeSend`. Not sent after all (a circuit opened meanwhile,
     * or a sticky PAC came first), it is returned among the attempts as a transient non-call, so
     * the ledger closes it and no record stays in flight.
     */
    recorded?: { pac: string; id: string },
  ): Promise<ChainResult> {
    const attempts: AttemptRecord[] = [];
    let unused = recorded;
    const take = (pac: string) => {
      if (unused?.pac !== pac) return undefined;
      const { id } = unused;
      unused = undefined;
      return id;
    };
    const settled = (result: Omit<ChainResult, 'attempts'>): ChainResult => {
      if (unused)
        attempts.push({
          id: unused.id,
          pac: unused.pac,
          outcome: 'transient',
          code: 'NOT_SENT' satisfies WorkerErrorCode,
          durationMs: 0,
        });
      return { ...result, attempts };
    };
    const candidates = sticky ? this.pacs.filter((p) => p.name === sticky) : this.pacs;
    let last: PacError | undefined;
    for (const pac of candidates) {
      const breaker = this.breakers.get(pac.name)!;
      // A sticky PAC is asked even with its circuit open: no other PAC may be.
      if (!sticky && !breaker.allows()) {
        const id = take(pac.name);
        attempts.push({
          ...(id ? { id } : {}),
          pac: pac.name,
          outcome: 'transient',
          code: 'CIRCUIT_OPEN' satisfies WorkerErrorCode,
          durationMs: 0,
        });
        last = new PacError({
          outcome: 'transient',
          pacCode: 'CIRCUIT_OPEN' satisfies WorkerErrorCode,
          pac: pac.name,
          message: 'circuit open',
        });
        continue;
      }
      const id = take(pac.name) ?? (beforeSend ? await beforeSend(pac.name) : undefined);
      const started = performance.now();
      try {
        const result = await pac.stamp(frozenXml, { idempotencyKey: stampKey });
        breaker.succeeded();
        attempts.push({
          ...(id ? { id } : {}),
          pac: pac.name,
          outcome: result.recovered ? 'already_stamped' : 'stamped',
          uuid: result.uuid,
          ...(result.recoveryCode ? { code: result.recoveryCode } : {}),
          durationMs: Math.round(performance.now() - started),
        });
        return settled({ result });
      } catch (error) {
        if (!(error instanceof PacError)) throw error;
        attempts.push({
          ...(id ? { id } : {}),
          pac: pac.name,
          outcome: error.outcome,
          code: error.pacCode,
          durationMs: Math.round(performance.now() - started),
        });
        last = error;
        if (error.outcome === 'transient') {
          breaker.failedNotProcessed();
          continue;
        }
        // Ambiguous: only this PAC can tell whether it stamped. Permanent: the document is refused.
        if (error.outcome === 'permanent') breaker.succeeded();
        return settled({ error });
      }
    }
    return settled({
      error:
        last ??
        new PacError({
          outcome: 'transient',
          pacCode: 'NO_PAC' satisfies WorkerErrorCode,
          pac: 'none',
          message: 'no PAC configured',
        }),
    });
  }
}

/**
 * The PAC that may hold a stamp of this document: the last one that failed ambiguously — or whose
 * call never got an outcome recorded (`in_flight`: the worker died during it) — and has not answered
 * about it since (a stamp, a recovery or a refusal). A transient failure there proves nothing about
 * the earlier attempt, so it does not release the document.
 */
export function stickyPac(attempts: readonly { pac: string; outcome: string }[]): string | undefined {
  let sticky: string | undefined;
  for (const a of attempts) {
    if (a.outcome === 'ambiguous' || a.outcome === 'in_flight') sticky = a.pac;
    else if (a.pac === sticky && a.outcome !== 'transient') sticky = undefined;
  }
  return sticky;
}
