/**
 * The sweeper's reconciliation with the SAT's record: each live organization with an e.firma
 * (stored under VAULT_KEYS, or in EFIRMA_DIR: sat-efirma.ts), every SAT_RECONCILE_EVERY_MS over the last SAT_RECONCILE_DAYS. When a run is due is
 * read from `sat_reconciliations` (so a restart neither repeats nor forgets one), and so are the
 * gauges: the latest finished run's findings stay loud until a later run no longer finds them.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import { runPeriodically } from './periodic.ts';
import type { KeyVault } from '@timbra/cfdi-node';
import { latestSatReconciliations, liveRfcOf, SatReconciliationRunning } from '@timbra/db/invoices';
import type { EachOrganization, OrganizationVisit } from '../organizations/across.ts';
import { needsPerson, type SatFinding } from './sat-findings.ts';
import { describeFinding } from './sat-report.ts';
import { anyEfirmaSource, efirmaOf } from './sat-efirma.ts';
import { runSatReconciliation, type SatRunSettings } from './sat-reconcile.ts';

const KINDS: readonly SatFinding['kind'][] = [
  'orphan',
  'missing',
  'cancelled_at_sat',
  'vigente_at_sat',
  'total_differs',
  'receptor_differs',
];

/** The gauges the alerts read (docs/alerts.md), a series an organization with an e.firma. */
export function satRecordMetrics(registry: Registry) {
  const findings = new Gauge({
    name: 'timbra_sat_findings',
    help: "Findings for a person in the latest reconciliation with the SAT's record, by kind (orphan, missing, cancelled_at_sat, vigente_at_sat, total_differs, receptor_differs)",
    labelNames: ['organization', 'kind'] as const,
    registers: [registry],
  });
  const lastSuccess = new Gauge({
    name: 'timbra_sat_reconcile_last_success_timestamp_seconds',
    help: "When the latest reconciliation with the SAT's record finished (Unix seconds; 0: none yet), per organization with an e.firma",
    labelNames: ['organization'] as const,
    registers: [registry],
  });
  const failures = new Counter({
    name: 'timbra_sat_reconcile_failures_total',
    help: "Reconciliations with the SAT's record that could not finish (the SAT refused, never decided, or was unreachable)",
    labelNames: ['organization'] as const,
    registers: [registry],
  });
  return {
    /** Shows a finished run (or none yet: 0). */
    show(organization: string, run: { finishedAt: Date | null; findings: unknown } | undefined): void {
      const list = (run?.findings ?? []) as SatFinding[];
      for (const kind of KINDS) {
        findings.set({ organization, kind }, list.filter((f) => f.kind === kind && needsPerson(f)).length);
      }
      lastSuccess.set({ organization }, run?.finishedAt ? run.finishedAt.getTime() / 1000 : 0);
    },
    failed(organization: string): void {
      failures.inc({ organization });
    },
  };
}

export type SatRecordMetrics = ReturnType<typeof satRecordMetrics>;

export interface SatScheduleDeps {
  each: EachOrganization;
  settings: SatRunSettings & {
    EFIRMA_DIR?: string | undefined;
    SAT_RECONCILE_EVERY_MS: number;
    SAT_RECONCILE_DAYS: number;
  };
  /** Opens the organizations' stored e.firmas (VAULT_KEYS). */
  vault?: KeyVault | undefined;
  metrics: SatRecordMetrics;
  logger: Logger;
  now?: () => Date;
}

/** One organization's turn: its gauges from the record, and a run when one is due. */
async function visit(deps: SatScheduleDeps, org: OrganizationVisit): Promise<void> {
  const { settings } = deps;
  const sources = { vault: deps.vault, EFIRMA_DIR: settings.EFIRMA_DIR };
  const rfc = anyEfirmaSource(sources) ? await liveRfcOf(org.prisma, org.organizationId) : undefined;
  if (!rfc) return;
  const now = (deps.now ?? (() => new Date()))();
  const log = deps.logger.child({ organization: org.organizationId, rfc });
  let found;
  try {
    found = await efirmaOf(org.prisma, { id: org.organizationId, rfc }, sources, now);
  } catch (error) {
    // Expired or not opening: the failures counter, and the gauges still shown so the stale alert fires.
    deps.metrics.failed(org.organizationId);
    deps.metrics.show(org.organizationId, (await latestSatReconciliations(org.prisma)).finished);
    log.error({ err: error }, 'sat_reconcile_failed: no usable e.firma');
    return;
  }
  if (!found) return;
  const efirma = found.efirma;
  const { latest, finished } = await latestSatReconciliations(org.prisma);
  deps.metrics.show(org.organizationId, finished);
  // A run that started and never finished (a worker killed mid-run) is due again after its longest wait.
  const since = latest ? latest.startedAt.getTime() + (latest.finishedAt ? 0 : settings.SAT_WAIT_MAX_MS) : 0;
  if (settings.SAT_RECONCILE_EVERY_MS === 0 || now.getTime() - since < settings.SAT_RECONCILE_EVERY_MS) return;
  log.info({ efirma: found.source }, 'sat_reconcile_started');
  try {
    const result = await runSatReconciliation(org.prisma, efirma, settings, {
      since: new Date(now.getTime() - settings.SAT_RECONCILE_DAYS * 86_400_000),
      until: now,
      runBy: 'worker',
    });
    for (const f of result.findings) {
      const { xml: _xml, ...logged } = f as SatFinding & { xml?: string };
      log[needsPerson(f) ? 'warn' : 'info']({ finding: logged }, `sat_finding: ${describeFinding(f)}`);
    }
    log.info(
      { sat: result.sat, ours: result.ours, matched: result.matched, findings: result.findings.length },
      'sat_reconciled',
    );
    deps.metrics.show(org.organizationId, { finishedAt: new Date(), findings: result.findings });
  } catch (error) {
    // Another sweeper or an operator is running one: theirs counts, nothing failed.
    if (error instanceof SatReconciliationRunning) return log.info({ reason: error.message }, 'sat_reconcile_skipped');
    deps.metrics.failed(org.organizationId);
    log.error({ err: error }, 'sat_reconcile_failed');
  }
}

/** One look at every organization. */
export function satPass(deps: SatScheduleDeps) {
  return deps.each('sat reconcile', (org) => visit(deps, org));
}

/** Looks every `intervalMs` (first after a minute); one pass at a time. */
export function runSatSchedule(deps: SatScheduleDeps, options: { intervalMs: number; firstAfterMs?: number }) {
  return runPeriodically(
    () => satPass(deps),
    (error) => deps.logger.error({ err: error }, 'sat reconcile pass failed'),
    options,
  );
}

/** The sweeper's schedule from the worker's settings, its gauges on `registry`; looks every 5 minutes. */
export function startSatSchedule(
  settings: SatScheduleDeps['settings'],
  each: EachOrganization,
  registry: Registry,
  logger: Logger,
  vault: KeyVault | undefined,
) {
  const metrics = satRecordMetrics(registry);
  if (!anyEfirmaSource({ vault, EFIRMA_DIR: settings.EFIRMA_DIR }))
    logger.info('neither VAULT_KEYS nor EFIRMA_DIR is set: no e.firma, no reconciliation with the SAT’s record');
  return runSatSchedule({ each, settings, vault, metrics, logger }, { intervalMs: 300_000 });
}
