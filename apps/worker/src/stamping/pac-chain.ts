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
     * for that PAC's call instead of `beforeSend`. Not sent after all (a circuit moved between the
     * load and the call), it is returned among the attempts as a transient non-call, so the ledger
     * closes it and no record stays in flight.
     */
    recorded?: { pac: string; id: string },
  ): Promise<ChainResult> {
    const attempts = new Attempts(recorded, beforeSend);
    const candidates = sticky ? this.pacs.filter((p) => p.name === sticky) : this.pacs;
    let last: PacError | undefined;
    for (const pac of candidates) {
      const breaker = this.breakers.get(pac.name)!;
      // A sticky PAC is asked even with its circuit open: no other PAC may be.
      if (!sticky && !breaker.allows()) {
        attempts.skipped(pac.name, 'CIRCUIT_OPEN');
        last = new PacError({
          outcome: 'transient',
          pacCode: 'CIRCUIT_OPEN' satisfies WorkerErrorCode,
          pac: pac.name,
          message: 'circuit open',
        });
        continue;
      }
      const id = await attempts.recordFor(pac.name);
      const started = performance.now();
      const took = () => Math.round(performance.now() - started);
      try {
        const result = await pac.stamp(frozenXml, { idempotencyKey: stampKey });
        breaker.succeeded();
        attempts.made(pac.name, id, {
          outcome: result.recovered ? 'already_stamped' : 'stamped',
          uuid: result.uuid,
          ...(result.recoveryCode ? { code: result.recoveryCode } : {}),
          durationMs: took(),
        });
        return attempts.settled({ result });
      } catch (error) {
        if (!(error instanceof PacError)) throw error;
        attempts.made(pac.name, id, { outcome: error.outcome, code: error.pacCode, durationMs: took() });
        last = error;
        if (error.outcome === 'transient') {
          breaker.failedNotProcessed();
          continue;
        }
        // Ambiguous: only this PAC can tell whether it stamped. Permanent: the document is refused.
        if (error.outcome === 'permanent') breaker.succeeded();
        return attempts.settled({ error });
      }
    }
    const none = new PacError({
      outcome: 'transient',
      pacCode: 'NO_PAC' satisfies WorkerErrorCode,
      pac: 'none',
      message: 'no PAC configured',
    });
    return attempts.settled({ error: last ?? none });
  }
}

/** One chain run's PAC calls as the ledger will keep them, and the call recorded ahead until one takes it. */
class Attempts {
  private readonly list: AttemptRecord[] = [];

  constructor(
    private ahead: { pac: string; id: string } | undefined,
    private readonly beforeSend: ((pac: string) => Promise<string>) | undefined,
  ) {}

  /** The write-ahead record of a call about to be made: the one recorded ahead for `pac`, else a new one. */
  async recordFor(pac: string): Promise<string | undefined> {
    return this.takeAhead(pac) ?? (this.beforeSend ? await this.beforeSend(pac) : undefined);
  }

  made(pac: string, id: string | undefined, call: Omit<AttemptRecord, 'pac' | 'id'>): void {
    this.list.push({ ...(id ? { id } : {}), pac, ...call });
  }

  /** A PAC passed over without a call (a transient outcome: proven not processed). */
  skipped(pac: string, code: WorkerErrorCode): void {
    this.made(pac, this.takeAhead(pac), { outcome: 'transient', code, durationMs: 0 });
  }

  /** The result, with a call recorded ahead but never made closed as NOT_SENT. */
  settled(result: Omit<ChainResult, 'attempts'>): ChainResult {
    if (this.ahead) this.skipped(this.ahead.pac, 'NOT_SENT');
    return { ...result, attempts: this.list };
  }

  private takeAhead(pac: string): string | undefined {
    if (this.ahead?.pac !== pac) return undefined;
    const { id } = this.ahead;
    this.ahead = undefined;
    return id;
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
