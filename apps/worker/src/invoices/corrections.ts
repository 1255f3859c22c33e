import type { Logger } from 'pino';
import {
  PacError,
  STAMP_WINDOW_MS,
  tryFreeze,
  tryRefreshFecha,
  type Csd,
  type OperatorCatalogs,
  type StampResult,
} from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import {
  claimDueCorrections,
  freezeVersion,
  holdStampRow,
  pacsThatReceived,
  releaseStampRow,
  settleCorrection,
  startLateRefreezes,
  type CorrectionPayload,
  type ProvingCorrection,
  invoiceVersionState,
} from '@timbra/db/invoices';
import { persistStamp, stampRowIdOf } from '@timbra/db/outbox';
import type { PacChain } from '../stamping/pac-chain.ts';

export interface CorrectionDeps {
  prisma: PrismaClient;
  chain: PacChain;
  csd: Csd;
  /** The operator's SAT catalogues, for the rules the new version is checked against. */
  catalogs?: OperatorCatalogs;
  logger: Logger;
  /** A PAC call recorded in flight younger than this may still reach the PAC: the proof waits. */
  inFlightGraceMs: number;
  /** Between two looks at a PAC that could not answer: `baseMs` doubling to `maxMs`. */
  retry: { baseMs: number; maxMs: number };
  batchSize: number;
  /**
   * The operator's switch: pending invoices this close to leaving the PACs' window (and not
   * ambiguous) get a correction that re-freezes them with a fresh Fecha, after the same proof.
   */
  autoRefreezeLateMarginMs?: number;
}

/** One PAC's answer, as kept on the superseded version (`proof`). */
interface ProofEntry {
  pac: string;
  answer: 'not_stamped';
  at: string;
}

type Proof =
  | { kind: 'proved'; entries: ProofEntry[] }
  | { kind: 'stamped'; pac: string; stamp: StampResult }
  | { kind: 'wait'; code: string; detail: string };

/**
 * Applies corrections that wait for their proof (see apps/api correct-invoice.ts): for each, every PAC
 * that received the invoice's current version is asked whether it stamped it (`lookup`, which never
 * stamps). All say no → the corrected request is frozen as the next version (Fecha now) and the stamp
 * row armed for it, in one transaction. One says yes → that stamp is recorded as the invoice's (the
 * correction is refused: `already_stamped`). One cannot answer → asked again later; never a guess.
 */
export class CorrectionRunner {
  constructor(private readonly deps: CorrectionDeps) {}

  /** One pass over the corrections that are due; returns how many were settled (applied or refused). */
  async runOnce(): Promise<number> {
    const { prisma } = this.deps;
    const margin = this.deps.autoRefreezeLateMarginMs;
    if (margin !== undefined) {
      const started = await prisma.$transaction((tx) =>
        startLateRefreezes(tx, STAMP_WINDOW_MS, margin, this.deps.batchSize),
      );
      if (started.length > 0)
        this.deps.logger.warn(
          { invoiceIds: started },
          'late invoices: re-freezing with a fresh Fecha once the PACs say the version was never stamped',
        );
    }
    // Claimed with a lease: the next look is pushed out while this pass asks the PACs.
    const due = await prisma.$transaction(async (tx) => {
      const rows = await claimDueCorrections(tx, this.deps.batchSize);
      for (const c of rows)
        await settleCorrection(tx, c.id, {
          status: 'proving',
          code: 'proving',
          detail: 'asking the PACs that received the version',
          retryInMs: 60_000,
        });
      return rows;
    });
    let settled = 0;
    for (const correction of due) {
      try {
        if (await this.settle(correction)) settled++;
      } catch (error) {
        this.deps.logger.error({ err: error, correctionId: correction.id }, 'correction failed; retried later');
      }
    }
    return settled;
  }

  private async settle(c: ProvingCorrection): Promise<boolean> {
    const { prisma, logger } = this.deps;
    const log = logger.child({ correctionId: c.id, invoiceId: c.invoiceId });
    const invoice = await invoiceVersionState(prisma, c.invoiceId);
    if (invoice.uuid !== null || invoice.version !== c.fromVersion) {
      await this.refuse(c, 'invoice_moved_on', `the invoice is ${invoice.status}, version ${invoice.version}`);
      return true;
    }
    // Held when the correction was recorded; again here in case an operator re-drove it meanwhile.
    await prisma.$transaction((tx) => holdStampRow(tx, c.invoiceId));
    const proof = await this.prove(c.invoiceId, c.fromVersion, invoice.frozenXml!, invoice.stampKey);
    switch (proof.kind) {
      case 'wait': {
        const delay = Math.min(this.deps.retry.maxMs, this.deps.retry.baseMs * 2 ** Math.min(c.attempts, 20));
        await prisma.$transaction((tx) =>
          settleCorrection(tx, c.id, { status: 'proving', ...proof, retryInMs: delay }),
        );
        log.warn({ code: proof.code, detail: proof.detail, retryInMs: delay }, 'correction waits for a PAC');
        return false;
      }
      case 'stamped': {
        // The version was stamped (its answer lost): that is the invoice's CFDI. Never a second one.
        await this.recordFoundStamp(c, proof.pac, proof.stamp);
        log.warn({ uuid: proof.stamp.uuid, pac: proof.pac }, 'correction refused: the version was stamped');
        return true;
      }
      case 'proved':
        return this.apply(c, invoice.frozenXml!, proof.entries);
    }
  }

  /** Asks every PAC that received the version. */
  private async prove(invoiceId: string, version: number, frozenXml: string, stampKey: string): Promise<Proof> {
    const received = await pacsThatReceived(this.deps.prisma, invoiceId, version, this.deps.inFlightGraceMs);
    const entries: ProofEntry[] = [];
    for (const r of received) {
      if (r.inFlight) return { kind: 'wait', code: 'call_in_flight', detail: `a call to ${r.pac} may still reach it` };
      if (!this.deps.chain.names.includes(r.pac))
        return {
          kind: 'wait',
          code: 'pac_not_configured',
          detail: `${r.pac} received the version and is not configured`,
        };
      let found: StampResult | undefined;
      try {
        found = await this.deps.chain
          .client(r.pac)
          .lookup(frozenXml, { idempotencyKey: stampKey, ...(r.uuid ? { uuid: r.uuid } : {}) });
      } catch (error) {
        if (!(error instanceof PacError)) throw error;
        return { kind: 'wait', code: 'pac_unanswered', detail: `${r.pac}: ${error.pacCode}: ${error.message}` };
      }
      if (found) return { kind: 'stamped', pac: r.pac, stamp: found };
      entries.push({ pac: r.pac, answer: 'not_stamped', at: new Date().toISOString() });
    }
    return { kind: 'proved', entries };
  }

  /** Freezes the corrected request — or, for a refresh, `frozenXml` with a fresh Fecha — as the next version. */
  private async apply(c: ProvingCorrection, frozenXml: string, entries: ProofEntry[]): Promise<boolean> {
    const stored = c.request as CorrectionPayload;
    const now = new Date();
    const { frozen, problems } = stored.refresh
      ? tryRefreshFecha(frozenXml, this.deps.csd, now, this.deps.catalogs)
      : tryFreeze({ ...(stored.request as object), issuedAt: now.toISOString() }, this.deps.csd, this.deps.catalogs);
    if (!frozen) {
      await this.refuse(c, 'fiscal_rules_failed', problems.map((p) => `${p.path}: ${p.message}`).join('; '));
      return true;
    }
    const version = await this.deps.prisma.$transaction(async (tx) => {
      const applied = await freezeVersion(tx, {
        invoiceId: c.invoiceId,
        fromVersion: c.fromVersion,
        frozen,
        reason: c.reason,
        createdBy: c.requestedBy,
        proof: entries,
        ...(stored.payment ? { payment: stored.payment } : {}),
      });
      if (applied !== undefined) await settleCorrection(tx, c.id, { status: 'applied', toVersion: applied });
      return applied;
    });
    if (version === undefined) {
      await this.refuse(c, 'invoice_moved_on', 'the invoice changed while the PACs were asked');
      return true;
    }
    this.deps.logger.info(
      { correctionId: c.id, invoiceId: c.invoiceId, version, proof: entries.map((e) => e.pac) },
      'correction applied: new version frozen',
    );
    return true;
  }

  private async recordFoundStamp(c: ProvingCorrection, pac: string, stamp: StampResult): Promise<void> {
    const { prisma } = this.deps;
    if (!stamp.sameDocument) {
      // A stamp under this key of other bytes (an earlier version): left to a person, loudly.
      this.deps.logger.error(
        { alert: 'correction_foreign_stamp', correctionId: c.id, invoiceId: c.invoiceId, uuid: stamp.uuid, pac },
        'a PAC holds a stamp of another version of this invoice: reconcile it by hand',
      );
      await this.refuse(c, 'foreign_stamp', `${pac} holds stamp ${stamp.uuid} of another version of this invoice`);
      return;
    }
    const outboxId = await stampRowIdOf(prisma, c.invoiceId);
    await prisma.$transaction(async (tx) => {
      await persistStamp(tx, { outboxId, invoiceId: c.invoiceId, version: c.fromVersion }, stamp, [
        { pac, outcome: 'already_stamped', uuid: stamp.uuid, code: 'LOOKUP', durationMs: 0 },
      ]);
      await settleCorrection(tx, c.id, {
        status: 'refused',
        code: 'already_stamped',
        detail: `${pac} had stamped version ${c.fromVersion} as ${stamp.uuid}: recorded as the invoice's CFDI`,
      });
    });
  }

  private async refuse(c: ProvingCorrection, code: string, detail: string): Promise<void> {
    await this.deps.prisma.$transaction(async (tx) => {
      await settleCorrection(tx, c.id, { status: 'refused', code, detail });
      await releaseStampRow(tx, c.invoiceId);
    });
  }
}

/** Runs corrections every `intervalMs` until stopped (one organization's runner, or every one's pass). */
export function runCorrections(
  runner: Pick<CorrectionRunner, 'runOnce'>,
  options: { intervalMs: number; logger: Logger },
) {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    runner
      .runOnce()
      .catch((error: unknown) => options.logger.error({ err: error }, 'correction pass failed'))
      .finally(() => (running = false));
  }, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
