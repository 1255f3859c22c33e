/**
 * Platform mode's worker: one process for every organization. What works on rows — the relay, the
 * sweeper, the stamp and cancel processors — is built an organization, on its own client (row-level
 * security holds it to its rows) with its own CSD, when its first job or row comes, and again every
 * few minutes (a renewed CSD); the queues and
 * their consumers are the deployment's, and a job names its organization (`org`). The relay goes
 * round the organizations with pending rows, a batch each in turn, so one organization's backlog
 * does not hold another's row back at the relay. The background duties (sweeps, corrections, the
 * globals' close timer, retention) visit the organizations in turn (`each`).
 */
import type { Logger } from 'pino';
import type { Csd } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import type { RelayedOf } from '../stamping/relay.ts';

/** What a background duty is given of one organization: its id, its client and its CSD. */
export interface OrganizationVisit {
  organizationId: string;
  prisma: PrismaClient;
  csd: Csd | undefined;
}

/**
 * Runs a background duty for each organization in turn (platform mode: every one; else the home
 * one); an organization whose visit fails is logged and counted, and the others go on.
 */
export type EachOrganization = <T>(
  what: string,
  duty: (organization: OrganizationVisit) => Promise<T>,
) => Promise<{ results: T[]; failed: number }>;

/** What the worker does for one organization. */
export interface OrganizationParts {
  relay: { drainOnce(): Promise<number>; capped: boolean };
  sweeper: { sweepOnce(): Promise<number> };
}

/** Where the organizations and their parts come from. */
export interface Organizations<P extends OrganizationParts> {
  /** The home organization (EMISOR_RFC): jobs and letters that name none are its. */
  home: { id: string; parts: P };
  /** Another organization's parts (its client and CSD); built once, kept. */
  build: (organizationId: string) => Promise<P>;
  /** Every organization's id (the sweeper's rounds). */
  ids: () => Promise<string[]>;
  /** The organizations with outbox rows waiting to be relayed (the relay's rounds). */
  pending: () => Promise<string[]>;
  /** The relay's batch: an organization whose batch came back full has more. */
  batchSize: number;
  /**
   * Platform mode's shared claim (`RelayAcross.drainOnce`): a round of several organizations in one
   * transaction. Absent: each organization's own relay, one after another.
   */
  relayAcross?: (organizationIds: string[]) => Promise<RelayedOf[]>;
  /**
   * How long an organization's parts are kept before they are built again with its CSD as stored
   * then (a renewal reaches the worker as it reaches the API). Default 5 minutes.
   */
  refreshMs?: number;
  /**
   * How long after a failed build (no CSD yet; a test organization without PAC_TEST_*) the next is
   * tried: until then its rows and duties wait, unlogged — the failure was logged once. Default 30 s.
   */
  retryFailedMs?: number;
  logger: Logger;
}

/** Organizations in one transaction of the shared relay claim (a batch each at most). */
const ACROSS_ROUND = 64;

/** An organization whose last build failed, not yet tried again: its work waits, already logged. */
export class BuildFailedRecently extends Error {
  constructor(readonly organizationId: string) {
    super(`organization ${organizationId}: its last build failed; it is tried again shortly`);
  }
}

/** A failure of one organization's round, logged unless it was logged already. */
function logFailure(logger: Logger, error: unknown, id: string, what: string): void {
  if (!(error instanceof BuildFailedRecently))
    logger.error({ err: error, organization: id }, `${what} failed for an organization`);
}

export class AcrossOrganizations<P extends OrganizationParts> {
  private readonly built = new Map<string, { parts: Promise<P>; at: number; failedAt?: number }>();
  /** The last drain left an organization's share of the queue full, with rows still pending. */
  capped = false;
  constructor(private readonly organizations: Organizations<P>) {}

  /**
   * The parts of `organizationId` (absent: the home organization's). A job (`afterFailure: 'build'`)
   * has them built again at once after a failure; the polling rounds wait retryFailedMs.
   */
  partsOf(organizationId: string | undefined, afterFailure: 'wait' | 'build' = 'wait'): Promise<P> {
    const { home } = this.organizations;
    if (organizationId === undefined || organizationId === home.id) return Promise.resolve(home.parts);
    const kept = this.built.get(organizationId);
    const recently =
      kept?.failedAt !== undefined && Date.now() - kept.failedAt < (this.organizations.retryFailedMs ?? 30_000);
    if (recently && afterFailure === 'wait') return Promise.reject(new BuildFailedRecently(organizationId));
    if (kept && kept.failedAt === undefined && Date.now() - kept.at < (this.organizations.refreshMs ?? 300_000))
      return kept.parts;
    const parts = this.organizations.build(organizationId);
    const entry: { parts: Promise<P>; at: number; failedAt?: number } = { parts, at: Date.now() };
    this.built.set(organizationId, entry);
    // A failed build (no CSD yet, a vault that does not open it) is tried again after retryFailedMs.
    parts.catch(() => {
      entry.failedAt = Date.now();
    });
    return parts;
  }

  /**
   * Drains every organization's pending rows: rounds of one batch an organization, in turn, each
   * going on while its batches come back full (as a relay alone drains); returns how many rows were
   * published. `named`: only those organizations (the NOTIFYs that woke the relay named them), and
   * no question to Postgres of which have rows pending.
   */
  async drainAll(named?: ReadonlySet<string>): Promise<number> {
    let total = 0;
    let capped = false;
    let due = named ? [...named] : await this.organizations.pending();
    const { batchSize, relayAcross } = this.organizations;
    while (due.length > 0) {
      const rounds = relayAcross ? await this.roundsAcross(due, relayAcross) : this.roundsEach(due);
      const more: string[] = [];
      for await (const round of rounds) {
        total += round.published;
        if (round.published >= batchSize) more.push(round.organizationId);
        else capped ||= round.capped;
      }
      due = more;
    }
    // A round of some organizations leaves another's full share as it was: a round of all says.
    this.capped = named ? this.capped || capped : capped;
    return total;
  }

  /** A round of each organization's own relay, one after another. */
  private async *roundsEach(due: readonly string[]): AsyncGenerator<RelayedOf> {
    for (const id of due) {
      try {
        const { relay } = await this.partsOf(id);
        const published = await relay.drainOnce();
        yield { organizationId: id, published, capped: relay.capped };
      } catch (error) {
        // One organization that cannot be relayed does not stop the others.
        logFailure(this.organizations.logger, error, id, 'relay round');
      }
    }
  }

  /**
   * Rounds of the shared claim, `ACROSS_ROUND` organizations a transaction; only organizations
   * whose parts build (a CSD) are claimed for: another's rows wait, as its own relay's would.
   */
  private async roundsAcross(
    due: readonly string[],
    relayAcross: (organizationIds: string[]) => Promise<RelayedOf[]>,
  ): Promise<RelayedOf[]> {
    const ready: string[] = [];
    for (const id of due)
      await this.partsOf(id).then(
        () => ready.push(id),
        (error: unknown) => logFailure(this.organizations.logger, error, id, 'relay round'),
      );
    const rounds: RelayedOf[] = [];
    for (let i = 0; i < ready.length; i += ACROSS_ROUND) {
      const some = ready.slice(i, i + ACROSS_ROUND);
      try {
        rounds.push(...(await relayAcross(some)));
      } catch (error) {
        this.organizations.logger.error({ err: error, organizations: some }, 'relay round failed for organizations');
      }
    }
    return rounds;
  }

  /** One sweep of every organization; returns what they put back. */
  async sweepOnce(): Promise<number> {
    const { results } = await this.each('sweep', (parts) => parts.sweeper.sweepOnce());
    return results.reduce((a, b) => a + b, 0);
  }

  /**
   * Runs `duty` for each organization `which` names (default: every one), one after another, each on
   * its own parts; one that fails is logged and the others go on. Returns what each gave and how
   * many failed.
   */
  async each<T>(
    what: string,
    duty: (parts: P, organizationId: string) => Promise<T>,
    which: () => Promise<string[]> = this.organizations.ids,
  ): Promise<{ results: T[]; failed: number }> {
    const results: T[] = [];
    let failed = 0;
    for (const id of await which()) {
      try {
        results.push(await duty(await this.partsOf(id), id));
      } catch (error) {
        failed++;
        logFailure(this.organizations.logger, error, id, what);
      }
    }
    return { results, failed };
  }
}
