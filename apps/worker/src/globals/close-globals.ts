/**
 * The facturas globales' close timer, run by the sweeper role for every organization in turn: every
 * GLOBAL_CLOSE_POLL_SECONDS each period with open tickets that ended GLOBAL_CLOSE_DELAY_MINUTES ago is
 * issued (@timbra/globals: exactly once, however many workers run this at the same time) with the
 * organization's own CSD, and how late its oldest period is goes to
 * `timbra_global_period_lag_seconds{organization}` and, within a day of the SAT's 72 hours, to a
 * `global_period_late` line. The emisor is the organization's row as the API last recorded it.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { OperatorCatalogs } from '@timbra/cfdi-core';
import { emisorById } from '@timbra/db/invoices';
import { organizationSettings, type OrganizationSettings } from '@timbra/db/organizations';
import { globalLag, issueDueGlobals, type IssuedGlobal } from '@timbra/globals';
import type { EachOrganization, OrganizationVisit } from '../organizations/across.ts';

export interface GlobalCloserDeps {
  /** Visits each organization (its client and CSD; without a CSD its periods only wait, the gauge says so). */
  each: EachOrganization;
  catalogs?: OperatorCatalogs | undefined;
  /** SERIE_INGRESO (an organization's own serie first), GLOBAL_MAX_CONCEPTOS, GLOBAL_CLOSE_DELAY_MINUTES (in ms). */
  serieIngreso: string;
  maxConceptosPerGlobal: number;
  closeDelayMs: number;
  logger: Logger;
  /**
   * An organization's own settings (a test twin's: its live organization's — ownInvoicing); default:
   * its row's, read on its client.
   */
  settingsOf?: (organizationId: string) => Promise<OrganizationSettings>;
}

/** The close timer's metrics, on the worker's registry. */
export function globalCloserMetrics(registry: Registry) {
  return {
    issued: new Counter({
      name: 'timbra_global_periods_issued_total',
      help: 'Periods whose factura global this process issued, by who asked (schedule: the worker’s close timer; admin: POST /v1/globals on the API)',
      labelNames: ['by'] as const,
      registers: [registry],
    }),
    lag: new Gauge({
      name: 'timbra_global_period_lag_seconds',
      help: 'Seconds since the end of the organization’s oldest period whose tickets are not all in a stamped factura global (0: none); the SAT allows 72 h',
      labelNames: ['organization'] as const,
      registers: [registry],
    }),
  };
}

export type GlobalCloserMetrics = ReturnType<typeof globalCloserMetrics>;

/** One organization's pass: its due periods issued, then its lag measured. @returns what it issued. */
export async function closeGlobalsOnce(
  org: OrganizationVisit,
  deps: Omit<GlobalCloserDeps, 'each'>,
  metrics: GlobalCloserMetrics,
  now = new Date(),
): Promise<IssuedGlobal[]> {
  const { prisma, csd, organizationId } = org;
  const emisor = await emisorById(prisma, organizationId);
  if (!emisor) return []; // the API has not started yet: no emisor, no tickets
  // The organization's own serie (PATCH /v1/organizations/:id), else the deployment's SERIE_INGRESO.
  const own = await (deps.settingsOf?.(organizationId) ?? organizationSettings(prisma, organizationId));
  const issued = csd
    ? await issueDueGlobals(
        prisma,
        {
          organizationId: emisor.id,
          emisor,
          serieIngreso: own.series?.ingreso ?? deps.serieIngreso,
          maxConceptosPerGlobal: deps.maxConceptosPerGlobal,
          csd,
          catalogs: deps.catalogs,
        },
        deps.closeDelayMs,
        now,
      )
    : [];
  const log = deps.logger.child({ organization: organizationId });
  for (const global of issued) {
    if (!global.created) continue;
    metrics.issued.inc({ by: 'schedule' });
    log.info(
      {
        globalId: global.periodId,
        period: global.startsOn,
        tickets: global.tickets,
        total: global.total,
        invoices: global.invoiceIds,
      },
      'factura global issued',
    );
  }
  const lag = await globalLag(prisma, { organizationId: emisor.id, emisor }, now);
  metrics.lag.set({ organization: organizationId }, lag.oldestUnstampedSeconds);
  if (!csd && lag.oldestUnstampedSeconds > 0)
    log.warn('no CSD: facturas globales are not issued (the periods wait, and the lag gauge grows)');
  if (lag.oldestUnstampedSeconds > lag.deadlineSeconds - 24 * 3600)
    log.warn(
      { alert: 'global_period_late', lagSeconds: Math.round(lag.oldestUnstampedSeconds) },
      'a closed period has no stamped factura global and the SAT deadline (72 h after its close) is near or past',
    );
  return issued;
}

/**
 * Runs a pass over every organization at start and then every `intervalMs`, one at a time; `stop`
 * waits for the pass under way (each period's transaction commits or rolls back whole either way).
 */
export function runGlobalCloser(deps: GlobalCloserDeps, metrics: GlobalCloserMetrics, options: { intervalMs: number }) {
  let running: Promise<void> | undefined;
  const pass = () => {
    running ??= deps
      .each('closing global periods', (org) => closeGlobalsOnce(org, deps, metrics))
      .then(() => undefined)
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'closing global periods failed'))
      .finally(() => (running = undefined));
  };
  pass();
  const timer = setInterval(pass, options.intervalMs);
  timer.unref();
  return {
    stop: async (): Promise<void> => {
      clearInterval(timer);
      await running;
    },
  };
}
