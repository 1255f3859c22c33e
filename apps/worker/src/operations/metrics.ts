import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { STAMP_WINDOW_MS } from '@timbra/cfdi-core';
import type { PrismaClient } from '@timbra/db';
import { deliveryBacklog, endpointsDisabledByFailures } from '@timbra/db/deliveries';
import { correctionsProving, invoicesNeedingData, lateInvoices } from '@timbra/db/invoices';
import { deadLetterCount, oldestOpenOutboxAgeSeconds, outboxCountsByStatus } from '@timbra/db/outbox';
import { reversedRefundsStanding } from '@timbra/db/payments';
import type { PacChain } from '../stamping/pac-chain.ts';

type Deps = {
  prisma: PrismaClient;
  chain: PacChain;
  /** An invoice is late this long before its Fecha leaves the PACs' window (default 12 h). */
  lateMarginMs?: number;
};

/**
 * The worker's Prometheus metrics on their own registry. Gauges that describe the backlog are read
 * at scrape time from Postgres (the record).
 */
export function createWorkerMetrics(deps: Deps) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const stamping = stampingMetrics(registry);
  outboxGauges(registry, deps);
  invoiceGauges(registry, deps);
  circuitGauge(registry, deps);
  const deliveries = deliveryMetrics(registry, deps);
  const history = historyMetrics(registry);
  return { registry, ...stamping, ...deliveries, ...history };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/** PAC calls: attempts by outcome, their duration, failovers. */
function stampingMetrics(registry: Registry) {
  const attempts = new Counter({
    name: 'timbra_stamp_attempts_total',
    help: 'PAC calls by PAC and outcome (stamped, already_stamped, transient, ambiguous, permanent)',
    labelNames: ['pac', 'outcome'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'timbra_stamp_duration_seconds',
    help: 'Duration of PAC stamp calls',
    labelNames: ['pac'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  const failovers = new Counter({
    name: 'timbra_failovers_total',
    help: 'Stamps that went to a PAC after a not-processed failure of an earlier one',
    registers: [registry],
  });
  return {
    /** Records the PAC calls of one job. */
    record(calls: readonly { pac: string; outcome: string; durationMs: number }[]): void {
      for (const c of calls) {
        attempts.inc({ pac: c.pac, outcome: c.outcome });
        if (c.durationMs > 0) latency.observe({ pac: c.pac }, c.durationMs / 1000);
      }
      const answered = calls.at(-1);
      if (calls.length > 1 && answered && (answered.outcome === 'stamped' || answered.outcome === 'already_stamped'))
        failovers.inc();
    },
  };
}

/** The outbox's backlog and its dead letters, read from Postgres at scrape time. */
function outboxGauges(registry: Registry, deps: Deps): void {
  new Gauge({
    // Named for what it counts: every row not done, by status — `failed` (dead letters) included.
    name: 'timbra_outbox_rows',
    help: 'Outbox rows not done, by status (pending, enqueued, held, failed)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      const rows = await outboxCountsByStatus(deps.prisma);
      this.reset();
      for (const r of rows) this.set({ status: r.status }, r.n);
    },
  });
  new Gauge({
    name: 'timbra_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest outbox row not done (0 when none): the first thing to alert on',
    registers: [registry],
    async collect() {
      this.set(await oldestOpenOutboxAgeSeconds(deps.prisma));
    },
  });
  new Gauge({
    name: 'timbra_dead_letters',
    help: 'Dead letters: outbox rows in status failed (Postgres, the record; a re-drive lowers it at once)',
    registers: [registry],
    async collect() {
      this.set(await deadLetterCount(deps.prisma));
    },
  });
}

/** Invoices that wait: for data, for the PACs' window, for a correction's proof, for an operator. */
function invoiceGauges(registry: Registry, deps: Deps): void {
  // Both needs_data gauges from one query a scrape: a scrape starts collecting every metric in
  // registration order before awaiting any, so the age gauge takes the count gauge's query.
  let needsData: ReturnType<typeof invoicesNeedingData> | undefined;
  new Gauge({
    name: 'timbra_invoices_needs_data',
    help: 'Invoices that could not be frozen as they are (needs_data): money arrived, the CFDI waits for a person',
    registers: [registry],
    async collect() {
      needsData = invoicesNeedingData(deps.prisma);
      this.set((await needsData).count);
    },
  });
  new Gauge({
    name: 'timbra_invoices_needs_data_oldest_age_seconds',
    help: 'Age of the oldest invoice in needs_data (0 when none): it waits for a person',
    registers: [registry],
    async collect() {
      const query = needsData ?? invoicesNeedingData(deps.prisma);
      needsData = undefined;
      this.set((await query).oldestAgeSeconds);
    },
  });
  new Gauge({
    name: 'timbra_invoices_late',
    help: 'Pending invoices whose Fecha leaves the PACs’ 72-hour window within the late margin: re-freeze them (PATCH with a reason) unless stamped soon',
    registers: [registry],
    async collect() {
      this.set((await lateInvoices(deps.prisma, STAMP_WINDOW_MS, deps.lateMarginMs ?? 12 * 3_600_000)).count);
    },
  });
  let corrections: ReturnType<typeof correctionsProving> | undefined;
  new Gauge({
    name: 'timbra_corrections_proving',
    help: 'Corrections waiting for every PAC that received the version to say it never stamped it',
    registers: [registry],
    async collect() {
      corrections = correctionsProving(deps.prisma);
      this.set((await corrections).count);
    },
  });
  new Gauge({
    name: 'timbra_corrections_proving_oldest_age_seconds',
    help: 'Age of the oldest correction still proving (0 when none): a PAC that does not answer holds it',
    registers: [registry],
    async collect() {
      const query = corrections ?? correctionsProving(deps.prisma);
      corrections = undefined;
      this.set((await query).oldestAgeSeconds);
    },
  });
  new Gauge({
    name: 'timbra_reversed_refunds_standing',
    help: 'Refunds reversed at the provider whose Egreso still stands: an operator cancels it once stamped',
    registers: [registry],
    async collect() {
      this.set(await reversedRefundsStanding(deps.prisma));
    },
  });
}

function circuitGauge(registry: Registry, deps: Deps): void {
  // One series per state, 1 for the state a PAC's circuit is in and 0 for the others (a state is not a
  // number: no 0.5 for half-open).
  const CIRCUIT_STATES = ['closed', 'half_open', 'open'] as const;
  new Gauge({
    name: 'timbra_circuit_state',
    help: 'Circuit breaker state per PAC: 1 on the series of its current state (closed, half_open, open), 0 on the others',
    labelNames: ['pac', 'state'] as const,
    registers: [registry],
    collect() {
      for (const [pac, breaker] of deps.chain.breakers) {
        const current = breaker.state === 'half-open' ? 'half_open' : breaker.state;
        for (const state of CIRCUIT_STATES) this.set({ pac, state }, state === current ? 1 : 0);
      }
    },
  });
}

/** Emails and webhooks: the backlog (from Postgres) and each attempt. */
function deliveryMetrics(registry: Registry, deps: Deps) {
  // The three delivery gauges from one query a scrape (see needsData above).
  let backlog: ReturnType<typeof deliveryBacklog> | undefined;
  const readBacklog = () =>
    (backlog ??= deliveryBacklog(deps.prisma).finally(() => setTimeout(() => (backlog = undefined), 0)));
  new Gauge({
    name: 'timbra_deliveries_pending',
    help: 'Emails and webhooks not delivered yet (pending or sending), by channel',
    labelNames: ['channel'] as const,
    registers: [registry],
    async collect() {
      const b = await readBacklog();
      for (const channel of ['email', 'webhook'] as const) this.set({ channel }, b[channel].pending);
    },
  });
  new Gauge({
    name: 'timbra_deliveries_oldest_pending_age_seconds',
    help: 'Age of the oldest email or webhook not delivered yet, by channel (0 when none)',
    labelNames: ['channel'] as const,
    registers: [registry],
    async collect() {
      const b = await readBacklog();
      for (const channel of ['email', 'webhook'] as const) this.set({ channel }, b[channel].oldestAgeSeconds);
    },
  });
  new Gauge({
    name: 'timbra_deliveries_dead',
    help: 'Emails and webhooks that failed for good and no replay has delivered since, by channel: they wait for a person',
    labelNames: ['channel'] as const,
    registers: [registry],
    async collect() {
      const b = await readBacklog();
      for (const channel of ['email', 'webhook'] as const) this.set({ channel }, b[channel].dead);
    },
  });
  new Gauge({
    name: 'timbra_webhook_endpoints_disabled',
    help: 'Webhook endpoints disabled after a failure streak (the merchant hears nothing until one is enabled again)',
    registers: [registry],
    async collect() {
      this.set(await endpointsDisabledByFailures(deps.prisma));
    },
  });
  const deliveryAttempts = new Counter({
    name: 'timbra_delivery_attempts_total',
    help: 'Email and webhook attempts by channel and outcome (delivered, failed, dead)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [registry],
  });
  const deliveryLatency = new Histogram({
    name: 'timbra_delivery_duration_seconds',
    help: 'Duration of email and webhook attempts',
    labelNames: ['channel'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [registry],
  });
  return {
    /** Records one delivery attempt. */
    recordDelivery(channel: string, outcome: string, durationMs: number): void {
      deliveryAttempts.inc({ channel, outcome });
      deliveryLatency.observe({ channel }, durationMs / 1000);
    },
  };
}

/** Retention passes and cancellations carried to their end. */
function historyMetrics(registry: Registry) {
  const pruned = new Counter({
    name: 'timbra_history_pruned_total',
    help: 'Rows the retention rules deleted, by table (outbox, pac_attempts, webhook_events)',
    labelNames: ['table'] as const,
    registers: [registry],
  });
  const prunedAt = new Gauge({
    name: 'timbra_history_prune_last_success_timestamp_seconds',
    help: 'When the last retention pass of this worker succeeded (Unix seconds; 0: none yet)',
    registers: [registry],
  });
  const cancellations = new Counter({
    name: 'timbra_cancellations_total',
    help: 'Cancellations carried to their end, by outcome: cancelled, rejected (by the receptor), failed (the PAC refused, or the SAT never found the UUID)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  return {
    /** Records a cancellation that reached its end. */
    recordCancellation(outcome: 'cancelled' | 'rejected' | 'failed'): void {
      cancellations.inc({ outcome });
    },
    /** Records a retention pass that succeeded. */
    recordPrune(deleted: Record<string, number>): void {
      for (const [table, n] of Object.entries(deleted)) pruned.inc({ table }, n);
      prunedAt.set(Date.now() / 1000);
    },
  };
}
