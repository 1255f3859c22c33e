/**
 * What reconciliation against the SAT's own record reads of an organization's invoices, and how it
 * adopts a timbre the SAT holds for one of them: through `persistStamp`, the one way a stamp lands
 * on an invoice (status guard, outbox row done, one transaction).
 */
import type { Prisma } from '../generated/client.ts';
import type { InvoiceStatus } from './invoice-status.ts';
import { persistStamp, type PersistedStamp } from '../outbox/stamping.ts';
import { stampRowIdOf } from '../outbox/outbox.ts';
import type { Db } from '../sql.ts';

/** An invoice as the comparison with the SAT sees it. */
export interface InvoiceForSat {
  id: string;
  serie: string;
  folio: number;
  kind: string;
  status: InvoiceStatus;
  uuid: string | null;
  total: string;
  /** The CFDI's Fecha as frozen (the emisor's local time). */
  fecha: string | null;
  frozenXml: string | null;
  stampedAt: Date | null;
  /** A cancellation asked of the PAC and not finished. */
  cancelPending: boolean;
}

const select = {
  id: true,
  serie: true,
  folio: true,
  kind: true,
  status: true,
  uuid: true,
  total: true,
  fecha: true,
  frozenXml: true,
  stampedAt: true,
  cancelRequests: { where: { status: { in: ['requested', 'accepted'] } }, select: { id: true } },
} satisfies Prisma.InvoiceSelect;

type Selected = Prisma.InvoiceGetPayload<{ select: typeof select }>;

const shape = (i: Selected): InvoiceForSat => ({
  id: i.id,
  serie: i.serie,
  folio: i.folio,
  kind: i.kind,
  status: i.status,
  uuid: i.uuid?.toUpperCase() ?? null,
  total: i.total.toFixed(2),
  fecha: i.fecha,
  frozenXml: i.frozenXml,
  stampedAt: i.stampedAt,
  cancelPending: i.cancelRequests.length > 0,
});

/**
 * The invoices of the client's organization frozen with a Fecha in [from, to] (the SAT's own
 * period rule, on the same wall-clock text), and those holding any of `uuids` whatever their Fecha.
 */
export async function invoicesForSat(
  db: Db,
  period: { from: string; to: string },
  uuids: readonly string[],
): Promise<InvoiceForSat[]> {
  const rows = await db.invoice.findMany({
    where: {
      OR: [
        { fecha: { gte: period.from, lte: period.to } },
        ...(uuids.length > 0
          ? [{ uuid: { in: [...uuids.map((u) => u.toUpperCase()), ...uuids.map((u) => u.toLowerCase())] } }]
          : []),
      ],
    },
    select,
  });
  return rows.map(shape);
}

/** An invoice by serie and folio, with every frozen version it ever had (the current one last). */
export async function invoiceVersionsBySerieFolio(
  db: Db,
  serie: string,
  folio: number,
): Promise<
  { invoice: InvoiceForSat; version: number; versions: { version: number; frozenXml: string }[] } | undefined
> {
  const found = await db.invoice.findFirst({
    where: { serie, folio },
    select: {
      ...select,
      version: true,
      versions: { select: { version: true, frozenXml: true }, orderBy: { version: 'asc' } },
    },
  });
  if (!found) return undefined;
  const versions = found.versions.filter((v) => v.version !== found.version);
  if (found.frozenXml) versions.push({ version: found.version, frozenXml: found.frozenXml });
  return { invoice: shape(found), version: found.version, versions };
}

/**
 * Records a timbre the SAT holds for the invoice's current version as its stamp: the same write a
 * PAC's answer makes (`persistStamp`), so the SAT's CFDI must be that version's frozen bytes with
 * `tfdXml` inserted (the caller compares them). `pac` is the PAC the version was last sent to, when
 * known. Written only while the invoice waits for a stamp (pending, stamp_failed).
 */
export async function adoptSatStamp(
  db: Db,
  invoiceId: string,
  version: number,
  stamp: { uuid: string; tfdXml: string },
): Promise<PersistedStamp> {
  const attempt = await db.pacAttempt.findFirst({
    where: { invoiceId, version },
    orderBy: { createdAt: 'desc' },
    select: { pac: true },
  });
  const outboxId = await stampRowIdOf(db, invoiceId);
  return persistStamp(db, { outboxId, invoiceId, version }, { ...stamp, pac: attempt?.pac ?? 'sat' }, []);
}

/** A run of reconciliation with the SAT, as stored. */
export interface SatReconciliationRow {
  id: string;
  periodFrom: string;
  periodTo: string;
  runBy: string;
  startedAt: Date;
  finishedAt: Date | null;
  satCount: number | null;
  ourCount: number | null;
  matched: number | null;
  findings: unknown;
  error: string | null;
}

/** Another run of the organization's is under way (started at `startedAt`, not finished). */
export class SatReconciliationRunning extends Error {
  constructor(readonly startedAt: Date | undefined) {
    super(
      `a reconciliation with the SAT's record is already running${startedAt ? ` (since ${startedAt.toISOString()})` : ''}`,
    );
    this.name = 'SatReconciliationRunning';
  }
}

/**
 * Records that a run starts (so a run that dies half-way is seen: started, never finished), one at
 * a time per organization: a run unfinished for `abandonAfterMs` (the longest a run waits on the
 * SAT) is closed as abandoned first; one still within it refuses this one.
 *
 * @throws SatReconciliationRunning
 */
export async function startSatReconciliation(
  db: Db,
  run: { periodFrom: string; periodTo: string; runBy: string },
  abandonAfterMs: number,
): Promise<string> {
  const now = new Date();
  await db.satReconciliation.updateMany({
    where: { finishedAt: null, startedAt: { lt: new Date(now.getTime() - abandonAfterMs) } },
    data: { finishedAt: now, error: 'abandoned: the run stopped before it finished (its process ended)' },
  });
  try {
    const row = await db.satReconciliation.create({ data: run, select: { id: true } });
    return row.id;
  } catch (error) {
    if ((error as { code?: string }).code !== 'P2002') throw error;
    const running = await db.satReconciliation.findFirst({ where: { finishedAt: null }, select: { startedAt: true } });
    throw new SatReconciliationRunning(running?.startedAt);
  }
}

/** Records how a run ended: its counts and findings, or why it could not finish. */
export async function finishSatReconciliation(
  db: Db,
  id: string,
  outcome: { satCount: number; ourCount: number; matched: number; findings: unknown[] } | { error: string },
): Promise<void> {
  await db.satReconciliation.updateMany({
    where: { id },
    data: {
      finishedAt: new Date(),
      ...('error' in outcome
        ? { error: outcome.error }
        : { ...outcome, findings: outcome.findings as Prisma.InputJsonValue }),
    },
  });
}

/** The organization's latest run (finished or not), and its latest finished one. */
export async function latestSatReconciliations(
  db: Db,
): Promise<{ latest?: SatReconciliationRow; finished?: SatReconciliationRow }> {
  const latest = await db.satReconciliation.findFirst({ orderBy: { startedAt: 'desc' } });
  const finished =
    latest?.finishedAt && !latest.error
      ? latest
      : await db.satReconciliation.findFirst({
          where: { finishedAt: { not: null }, error: null },
          orderBy: { startedAt: 'desc' },
        });
  return { ...(latest ? { latest } : {}), ...(finished ? { finished } : {}) };
}

/** The organization's RFC when it is live (a test organization's CFDIs are not at the SAT), else undefined. */
export async function liveRfcOf(db: Db, organizationId: string): Promise<string | undefined> {
  const row = await db.emisor.findUnique({ where: { id: organizationId }, select: { rfc: true, mode: true } });
  return row?.mode === 'live' ? row.rfc : undefined;
}
