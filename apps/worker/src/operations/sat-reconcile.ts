/**
 * Reconciliation against the SAT's own record (issue #48): the SAT's metadata of every CFDI the
 * organization issued in a period (Descarga Masiva, through the maintained client), compared with
 * its invoices (sat-findings.ts); each orphan timbre's XML fetched by UUID and, when it is byte for
 * byte one of an invoice's frozen versions with that invoice still waiting, adopted as its stamp.
 */
import { attr, DEFAULT_TIME_ZONE, formatFecha, parseXml, stampedXmlOf } from '@timbra/cfdi-core';
import { descargaService, satCfdi, satIssued, type Efirma, type SatRecordRow, type SatWait } from '@timbra/cfdi-node';
import type { PrismaClient } from '@timbra/db';
import {
  adoptSatStamp,
  finishSatReconciliation,
  invoicesForSat,
  invoiceVersionsBySerieFolio,
  latestSatReconciliations,
  startSatReconciliation,
} from '@timbra/db/invoices';
import type { Service } from '@nodecfdi/sat-ws-descarga-masiva';
import { compareWithSat, type OrphanReason, type SatFinding } from './sat-findings.ts';

export interface SatReconcileDeps {
  /** The organization's client (its row-level security). */
  db: PrismaClient;
  /** Descarga Masiva signing with the organization's e.firma. */
  service: Service;
  wait: SatWait;
  /** An invoice stamped less than this before now is not called missing yet. */
  lagMs: number;
  now: () => Date;
}

export interface SatReconciliation {
  /** Fecha bounds (Mexico City wall-clock, `YYYY-MM-DD HH:mm:ss`), both included. */
  period: { from: string; to: string };
  /** CFDIs the SAT lists; invoices of ours compared; of them, found on both sides. */
  sat: number;
  ours: number;
  matched: number;
  findings: SatFinding[];
}

/** The TFD element as written in a stamped CFDI (what a PAC inserted), or undefined. */
export function tfdFragmentOf(stampedXml: string): string | undefined {
  return /<([\w.-]+):TimbreFiscalDigital\b[^>]*?(?:\/>|>[\s\S]*?<\/\1:TimbreFiscalDigital>)/.exec(stampedXml)?.[0];
}

/** The stamped CFDI a version would be with this TFD (`stampedXmlOf`), or undefined if it cannot take it. */
function stampedFrom(frozenXml: string, tfd: string): string | undefined {
  try {
    return stampedXmlOf({ frozenXml, tfdXml: tfd }) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * The XML of orphans an earlier run fetched (kept in its findings): the SAT answers the same
 * request twice in a lifetime and refuses it while the first lives (72 h), so each is asked once.
 */
async function orphanXmlKnown(db: PrismaClient): Promise<Map<string, string>> {
  const { finished } = await latestSatReconciliations(db);
  const known = new Map<string, string>();
  for (const f of (finished?.findings ?? []) as SatFinding[]) {
    if (f.kind === 'orphan' && f.xml) known.set(f.uuid, f.xml);
  }
  return known;
}

/** An orphan timbre: adopted when it is ours and its invoice waits for it, else why not. */
async function resolveOrphan(
  deps: SatReconcileDeps,
  row: SatRecordRow,
  known: Map<string, string>,
): Promise<SatFinding> {
  const uuid = row.uuid.toUpperCase();
  const orphan = (reason: OrphanReason, more: Partial<Extract<SatFinding, { kind: 'orphan' }>> = {}): SatFinding => ({
    kind: 'orphan',
    reason,
    uuid,
    sat: row,
    ...more,
  });
  const xml = known.get(uuid) ?? (await satCfdi(deps.service, uuid, deps.wait));
  const tfd = xml ? tfdFragmentOf(xml) : undefined;
  if (!xml || !tfd) return orphan('xml_unavailable');
  const orphanOf = (reason: OrphanReason, more: Partial<Extract<SatFinding, { kind: 'orphan' }>> = {}) =>
    orphan(reason, { ...more, xml });
  const comprobante = parseXml(xml);
  const serie = attr(comprobante, 'Serie') ?? '';
  const folio = Number(attr(comprobante, 'Folio') ?? NaN);
  const found = Number.isInteger(folio) ? await invoiceVersionsBySerieFolio(deps.db, serie, folio) : undefined;
  if (!found) return orphanOf('no_invoice');
  const ref = { invoiceId: found.invoice.id, serieFolio: `${serie}-${folio}` };
  const version = found.versions.find((v) => stampedFrom(v.frozenXml, tfd) === xml);
  if (!version) return orphanOf('not_our_bytes', ref);
  if (found.invoice.uuid) return orphanOf('stamped_twice', { ...ref, invoiceUuid: found.invoice.uuid });
  if (version.version !== found.version) return orphanOf('superseded_version', ref);
  if (found.invoice.status !== 'pending' && found.invoice.status !== 'stamp_failed')
    return orphanOf('not_waiting', ref);
  const persisted = await adoptSatStamp(deps.db, found.invoice.id, version.version, {
    uuid,
    tfdXml: tfd,
  });
  return persisted.written ? { kind: 'adopted', uuid, ...ref } : orphanOf('not_waiting', ref);
}

/** Reconciles one organization's period with the SAT's record; adopts what can be adopted. */
export async function reconcileWithSat(
  deps: SatReconcileDeps,
  period: { from: string; to: string },
): Promise<SatReconciliation> {
  const sat = await satIssued(deps.service, period, deps.wait);
  const ours = await invoicesForSat(
    deps.db,
    { from: period.from.replace(' ', 'T'), to: period.to.replace(' ', 'T') },
    sat.map((r) => r.uuid),
  );
  const compared = compareWithSat(sat, ours, { now: deps.now(), lagMs: deps.lagMs });
  const findings = [...compared.findings];
  const known = compared.orphans.length > 0 ? await orphanXmlKnown(deps.db) : new Map<string, string>();
  for (const row of compared.orphans) findings.push(await resolveOrphan(deps, row, known));
  return { period, sat: sat.length, ours: ours.length, matched: compared.matched, findings };
}

/** What a run needs besides the organization's client: its e.firma and the settings. */
export interface SatRunSettings {
  SAT_DESCARGA_URL: string;
  SAT_LAG_MS: number;
  SAT_POLL_MS: number;
  SAT_WAIT_MAX_MS: number;
}

/** Mexico City's wall clock at `instant`, as the SAT reads FechaInicial/FechaFinal. */
export function satWallClock(instant: Date): string {
  return formatFecha(instant, DEFAULT_TIME_ZONE).replace('T', ' ');
}

/**
 * One recorded run for one organization: started and finished in `sat_reconciliations` (its
 * findings, or why it could not finish), the SAT's connections closed after.
 * @throws SatReconciliationRunning (nothing recorded) when another run of the organization's is
 *   under way; what stopped it (the SAT refused or never decided, a network failure), once recorded.
 */
export async function runSatReconciliation(
  db: PrismaClient,
  efirma: Efirma,
  settings: SatRunSettings,
  run: { since: Date; until: Date; runBy: string; now?: () => Date },
): Promise<SatReconciliation & { id: string }> {
  const period = { from: satWallClock(run.since), to: satWallClock(run.until) };
  const id = await startSatReconciliation(
    db,
    { periodFrom: period.from, periodTo: period.to, runBy: run.runBy },
    settings.SAT_WAIT_MAX_MS,
  );
  const { service, close } = descargaService(efirma, settings.SAT_DESCARGA_URL);
  try {
    const result = await reconcileWithSat(
      {
        db,
        service,
        wait: { pollMs: settings.SAT_POLL_MS, maxPollMs: 600_000, maxWaitMs: settings.SAT_WAIT_MAX_MS },
        lagMs: settings.SAT_LAG_MS,
        now: run.now ?? (() => new Date()),
      },
      period,
    );
    await finishSatReconciliation(db, id, {
      satCount: result.sat,
      ourCount: result.ours,
      matched: result.matched,
      findings: result.findings,
    });
    return { ...result, id };
  } catch (error) {
    await finishSatReconciliation(db, id, { error: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    close();
  }
}
