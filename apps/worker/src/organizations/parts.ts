/**
 * One organization's parts, as the worker builds them on its client and with its CSD: the relay, the
 * stamp and cancel processors, the sweeper and the corrections' runner (create-worker.ts composes
 * them; organizations/across.ts serves every organization's).
 */
import type { Queue } from 'bullmq';
import { STAMP_WINDOW_MS } from '@timbra/cfdi-core';
import { replacementsAwaitingCancellation, requestReplacedCancellation } from '@timbra/db/invoices';
import { settleDeadLetters, type LetterOwner } from '@timbra/db/outbox';
import type { WorkerDeps } from '../create-worker.ts';
import { createCancelProcessor } from '../invoices/cancel-processor.ts';
import { CorrectionRunner } from '../invoices/corrections.ts';
import { freezeDependents, freezeOverdueDependents } from '../invoices/freeze-dependents.ts';
import type { FairSlots } from '../stamping/fair-slots.ts';
import type { DeadLetterData, StampQueueData } from '../stamping/jobs.ts';
import { Relay } from '../stamping/relay.ts';
import { createStampGroupProcessor } from '../stamping/stamp-group.ts';
import { createStampProcessor, type StampProcessorDeps } from '../stamping/stamp-processor.ts';
import { stampWrites, type StampWritesAcross } from '../stamping/stamp-writes.ts';
import { Sweeper } from '../stamping/sweeper.ts';
import type { AcrossOrganizations } from './across.ts';

/** The queues every organization's parts publish to, and the process's PAC-call slots. */
export interface OrganizationQueues {
  queue: Queue<StampQueueData>;
  dlq: Queue<DeadLetterData>;
  slots: FairSlots;
}

/** One organization's relay, sweeper and processors, on its client and with its CSD. */
export function organizationParts(
  deps: WorkerDeps,
  { queue, dlq, slots }: OrganizationQueues,
  organizationId?: string,
  writesAcross?: StampWritesAcross,
) {
  const { prisma, csd } = deps;
  const org = organizationId ? { organizationId } : {};
  const relay = new Relay({
    prisma,
    queue,
    retry: deps.retry,
    batchSize: deps.relayBatchSize,
    ...(deps.stampGroups ? { groups: true } : {}),
    logger: deps.logger,
    ...org,
    ...(deps.relayShare ? { share: deps.relayShare } : {}),
  });
  const stamping: StampProcessorDeps = {
    prisma,
    writes: writesOf(deps, organizationId, writesAcross),
    chain: deps.chain,
    dlq,
    logger: deps.logger,
    alert: deps.alert ?? (() => undefined),
    ...org,
    ...(deps.onAttempts ? { onAttempts: deps.onAttempts } : {}),
    ...(csd
      ? { freezeDependents: (invoiceId: string) => freezeDependents(prisma, csd, invoiceId, deps.catalogs) }
      : {}),
    cancelReplaced: (replacementId: string) => requestReplacedCancellation(prisma, replacementId),
  };
  const stamp = createStampProcessor(stamping);
  const stampGroup = createStampGroupProcessor({ ...stamping, queue, retry: deps.retry, slots });
  const cancel = deps.csdCredentials
    ? createCancelProcessor({
        prisma,
        chain: deps.chain,
        csd: deps.csdCredentials,
        logger: deps.logger,
        poll: deps.cancelPoll ?? { baseMs: 5_000, maxMs: 3_600_000 },
        ...(deps.onCancellation ? { onOutcome: deps.onCancellation } : {}),
      })
    : undefined;
  const owner = { organization: organizationId ?? deps.organizations?.home ?? '', home: !organizationId };
  return {
    prisma,
    csd,
    relay,
    stamp,
    stampGroup,
    cancel,
    sweeper: createSweeper(deps, queue, dlq, owner),
    corrections: createCorrections(deps),
  };
}

/** Its stamp writes: its share of the deployment's batches in platform mode, else its own. */
function writesOf(deps: WorkerDeps, organizationId: string | undefined, across: StampWritesAcross | undefined) {
  const id = organizationId ?? deps.organizations?.home;
  return across && id ? across.for(id) : stampWrites(deps.prisma);
}

/** One organization's parts: its client, CSD, relay, processors, sweeper and corrections. */
export type OrganizationPartsOf = ReturnType<typeof organizationParts>;

/**
 * The corrections' pass: the home organization's runner alone, or — in platform mode — each
 * organization whose corrections are due (timbra_correction_organizations), on its own CSD.
 */
export function correctionsAcross(
  deps: WorkerDeps,
  home: OrganizationPartsOf,
  across: AcrossOrganizations<OrganizationPartsOf> | undefined,
) {
  const which = deps.organizations?.corrections;
  if (!across || !which) return home.corrections;
  const margin = deps.corrections?.autoRefreezeLateMarginMs;
  return {
    runOnce: async (): Promise<number> => {
      // Late is judged on Fecha read in Mexico's easternmost zone: up to 3 h before the row was
      // written (the Pacific zones). Four hours of slack make the organizations a superset.
      const lateBefore =
        margin === undefined ? undefined : new Date(Date.now() - (STAMP_WINDOW_MS - margin) + 4 * 3_600_000);
      const { results } = await across.each(
        'corrections',
        async (parts) => (await parts.corrections?.runOnce()) ?? 0,
        () => which(lateBefore),
      );
      return results.reduce((a, b) => a + b, 0);
    },
  };
}

/** The sweeper: enqueued rows Redis lost, overdue dependents, dead letters and replacements settled. */
function createSweeper(
  deps: WorkerDeps,
  queue: Queue<StampQueueData>,
  dlq: Queue<DeadLetterData>,
  owner: LetterOwner,
): Sweeper {
  const csd = deps.csd;
  return new Sweeper({
    prisma: deps.prisma,
    queue,
    staleMs: deps.sweeperStaleMs ?? 5 * 60_000,
    batchSize: deps.relayBatchSize,
    logger: deps.logger,
    ...(csd ? { freezeOverdue: () => freezeOverdueDependents(deps.prisma, csd, deps.catalogs) } : {}),
    // Only its organization's letters: another's row is out of this client's sight, not gone.
    settleDeadLetters: () => settleDeadLetters(deps.prisma, dlq, undefined, deps.organizations ? owner : undefined),
    cancelReplaced: async () => {
      let n = 0;
      for (const id of await replacementsAwaitingCancellation(deps.prisma, deps.relayBatchSize))
        if ((await requestReplacedCancellation(deps.prisma, id)).requested) n++;
      return n;
    },
  });
}

/** The corrections' runner (they freeze a new version: only with a CSD). */
function createCorrections(deps: WorkerDeps): CorrectionRunner | undefined {
  const csd = deps.csd;
  return csd
    ? new CorrectionRunner({
        prisma: deps.prisma,
        chain: deps.chain,
        csd,
        ...(deps.catalogs ? { catalogs: deps.catalogs } : {}),
        logger: deps.logger,
        inFlightGraceMs: deps.corrections?.inFlightGraceMs ?? 120_000,
        retry: deps.corrections?.retry ?? { baseMs: 5_000, maxMs: 600_000 },
        batchSize: deps.relayBatchSize,
        ...(deps.corrections?.autoRefreezeLateMarginMs !== undefined
          ? { autoRefreezeLateMarginMs: deps.corrections.autoRefreezeLateMarginMs }
          : {}),
      })
    : undefined;
}
