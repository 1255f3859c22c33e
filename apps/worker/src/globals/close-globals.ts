/**
 * The facturas globales' close timer, run by the sweeper role: every GLOBAL_CLOSE_POLL_SECONDS each
 * period with open tickets that ended GLOBAL_CLOSE_DELAY_MINUTES ago is issued (@timbra/globals:
 * exactly once, however many workers run this at the same time), and how late the oldest period is
 * goes to `timbra_global_period_lag_seconds` and, within a day of the SAT's 72 hours, to a
 * `global_period_late` line. The emisor is its row as the API last recorded it (EMISOR_RFC's).
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Csd, OperatorCatalogs } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { emisorByRfc } from '@timbra/db/invoices';
import { globalLag, issueDueGlobals, type IssuedGlobal } from '@timbra/globals';

export interface GlobalCloserDeps {
  prisma: PrismaClient;
  emisorRfc: string;
  /** The emisor's CSD; without one nothing can be sealed, and the periods only wait (the gauge says so). */
  csd: Csd | undefined;
  catalogs?: OperatorCatalogs | undefined;
  /** SERIE_INGRESO, GLOBAL_MAX_CONCEPTOS, GLOBAL_CLOSE_DELAY_MINUTES (in ms). */
  serieIngreso: string;
  maxConceptosPerGlobal: number;
  closeDelayMs: number;
  logger: Logger;
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
      help: 'Seconds since the end of the oldest period whose tickets are not all in a stamped factura global (0: none); the SAT allows 72 h',
      registers: [registry],
    }),
  };
}

export type GlobalCloserMetrics = ReturnType<typeof globalCloserMetrics>;

/** One pass: the due periods issued, then the lag measured. @returns what this pass issued. */
export async function closeGlobalsOnce(
  deps: GlobalCloserDeps,
  metrics: GlobalCloserMetrics,
  now = new Date(),
): Promise<IssuedGlobal[]> {
  const emisor = await emisorByRfc(deps.prisma, deps.emisorRfc);
  if (!emisor) return []; // the API has not started yet: no emisor, no tickets
  const issued = deps.csd
    ? await issueDueGlobals(
        deps.prisma,
        {
          emisorId: emisor.id,
          emisor,
          serieIngreso: deps.serieIngreso,
          maxConceptosPerGlobal: deps.maxConceptosPerGlobal,
          csd: deps.csd,
          catalogs: deps.catalogs,
        },
        deps.closeDelayMs,
        now,
      )
    : [];
  for (const global of issued) {
    if (!global.created) continue;
    metrics.issued.inc({ by: 'schedule' });
    deps.logger.info(
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
  const lag = await globalLag(deps.prisma, { emisorId: emisor.id, emisor }, now);
  metrics.lag.set(lag.oldestUnstampedSeconds);
  if (lag.oldestUnstampedSeconds > lag.deadlineSeconds - 24 * 3600)
    deps.logger.warn(
      { alert: 'global_period_late', lagSeconds: Math.round(lag.oldestUnstampedSeconds) },
      'a closed period has no stamped factura global and the SAT deadline (72 h after its close) is near or past',
    );
  return issued;
}

/**
 * Runs a pass at start and then every `intervalMs`, one at a time; `stop` waits for the pass under
 * way (its transaction commits or rolls back whole either way).
 */
export function runGlobalCloser(deps: GlobalCloserDeps, metrics: GlobalCloserMetrics, options: { intervalMs: number }) {
  if (!deps.csd)
    deps.logger.warn(
      'no CSD configured: facturas globales are not issued (their periods wait, and the lag gauge grows)',
    );
  let running: Promise<void> | undefined;
  const pass = () => {
    running ??= closeGlobalsOnce(deps, metrics)
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
