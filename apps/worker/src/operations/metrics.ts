import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { STAMP_WINDOW_MS } from '@timbra/cfdi-core';
import type { RawDb } from '@timbra/db';
import { backlogEverywhere, backlogOf, type Backlog, type ChannelBacklog } from '@timbra/db/organizations';
import type { PacChain } from '../stamping/pac-chain.ts';

type Deps = {
  /** An organization's client: the gauges show its backlog. */
  prisma: RawDb;
  /**
   * Platform mode: a session that names no organization, and the home organization. The gauges then
   * show every organization with something waiting (and the home one always), one series each.
   */
  everywhere?: { db: RawDb; home: string };
  chain: PacChain;
  /** An invoice is late this long before its Fecha leaves the PACs' window (default 12 h). */
  lateMarginMs?: number;
};

/**
 * The worker's Prometheus metrics on their own registry. Gauges that describe the backlog are read
 * at scrape time from Postgres (the record): one statement a scrape (@timbra/db's backlog), a series
 * an organization.
 */
export function createWorkerMetrics(deps: Deps) {
  const registry = new Registry();
  // Event-loop delay sampled every 100 ms, as the API's (prom-client's 10 woke the process 100 times a second).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const stamping = stampingMetrics(registry);
  const read = backlogReader(deps);
  outboxGauges(registry, read);
  invoiceGauges(registry, read);
  circuitGauge(registry, deps);
  const deliveries = deliveryMetrics(registry, read);
  const history = historyMetrics(registry);
  return { registry, ...stamping, ...deliveries, ...history };
}

/**
 * The backlog, read once a scrape: a scrape starts collecting every metric before awaiting any, so
 * the gauges share the first one's read, dropped once the scrape's turn of the event loop is over.
 */
function backlogReader(deps: Deps): () => Promise<Backlog[]> {
  const late = { windowMs: STAMP_WINDOW_MS, marginMs: deps.lateMarginMs ?? 12 * 3_600_000 };
  let reading: Promise<Backlog[]> | undefined;
  const readNow = async (): Promise<Backlog[]> => {
    if (deps.everywhere) return backlogEverywhere(deps.everywhere.db, late, deps.everywhere.home);
    const own = await backlogOf(deps.prisma, late);
    return own ? [own] : [];
  };
  return () => (reading ??= readNow().finally(() => setTimeout(() => (reading = undefined), 0)));
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

/**
 * One gauge of the backlog: a series an organization (the home one always, the others while
 * something of theirs waits), from the scrape's one read.
 */
function backlogGauge(
  registry: Registry,
  read: () => Promise<Backlog[]>,
  spec: { name: string; help: string },
  value: (b: Backlog) => number,
): void {
  new Gauge({
    ...spec,
    labelNames: ['organization'] as const,
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const b of rows) this.set({ organization: b.organization }, value(b));
    },
  });
}

/** The outbox's backlog and its dead letters. */
function outboxGauges(registry: Registry, read: () => Promise<Backlog[]>): void {
  new Gauge({
    // Named for what it counts: every row not done, by status — `failed` (dead letters) included.
    name: 'timbra_outbox_rows',
    help: 'Outbox rows not done, by organization and status (pending, enqueued, held, failed)',
    labelNames: ['organization', 'status'] as const,
    registers: [registry],
    async collect() {
      const rows = await read();
      this.reset();
      for (const b of rows)
        for (const status of ['pending', 'enqueued', 'held', 'failed'] as const)
          if (b.outbox[status] > 0) this.set({ organization: b.organization, status }, b.outbox[status]);
    },
  });
  backlogGauge(
    registry,
    read,
    {
      name: 'timbra_outbox_oldest_pending_age_seconds',
      help: 'Age of the oldest outbox row pending or enqueued (0 when none): the first thing to alert on',
    },
    (b) => b.outbox.oldestAgeSeconds,
  );
  backlogGauge(
    registry,
    read,
    {
      name: 'timbra_dead_letters',
      help: 'Dead letters: outbox rows in status failed (Postgres, the record; a re-drive lowers it at once)',
    },
    (b) => b.outbox.failed,
  );
}

/** Invoices that wait: for data, for the PACs' window, for a correction's proof, for an operator. */
function invoiceGauges(registry: Registry, read: () => Promise<Backlog[]>): void {
  const gauges: [string, string, (b: Backlog) => number][] = [
    [
      'timbra_invoices_needs_data',
      'Invoices that could not be frozen as they are (needs_data): money arrived, the CFDI waits for a person',
      (b) => b.needsData.count,
    ],
    [
      'timbra_invoices_needs_data_oldest_age_seconds',
      'Age of the oldest invoice in needs_data (0 when none): it waits for a person',
      (b) => b.needsData.oldestAgeSeconds,
    ],
    [
      'timbra_invoices_late',
      'Pending invoices whose Fecha leaves the PACs’ 72-hour window within the late margin: re-freeze them (PATCH with a reason) unless stamped soon',
      (b) => b.late,
    ],
    [
      'timbra_corrections_proving',
      'Corrections waiting for every PAC that received the version to say it never stamped it',
      (b) => b.corrections.proving,
    ],
    [
      'timbra_corrections_proving_oldest_age_seconds',
      'Age of the oldest correction still proving (0 when none): a PAC that does not answer holds it',
      (b) => b.corrections.oldestAgeSeconds,
    ],
    [
      'timbra_reversed_refunds_standing',
      'Refunds reversed at the provider whose Egreso still stands: an operator cancels it once stamped',
      (b) => b.reversedRefundsStanding,
    ],
  ];
  for (const [name, help, value] of gauges) backlogGauge(registry, read, { name, help }, value);
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
function deliveryMetrics(registry: Registry, read: () => Promise<Backlog[]>) {
  const channelGauge = (name: string, help: string, value: (c: ChannelBacklog) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['organization', 'channel'] as const,
      registers: [registry],
      async collect() {
        const rows = await read();
        this.reset();
        for (const b of rows)
          for (const channel of ['email', 'webhook'] as const)
            this.set({ organization: b.organization, channel }, value(b[channel]));
      },
    });
  channelGauge(
    'timbra_deliveries_pending',
    'Emails and webhooks not delivered yet (pending or sending), by channel',
    (c) => c.pending,
  );
  channelGauge(
    'timbra_deliveries_oldest_pending_age_seconds',
    'Age of the oldest email or webhook not delivered yet, by channel (0 when none)',
    (c) => c.oldestAgeSeconds,
  );
  channelGauge(
    'timbra_deliveries_dead',
    'Emails and webhooks that failed for good and no replay has delivered since, by channel: they wait for a person',
    (c) => c.dead,
  );
  backlogGauge(
    registry,
    read,
    {
      name: 'timbra_webhook_endpoints_disabled',
      help: 'Webhook endpoints disabled after a failure streak (the merchant hears nothing until one is enabled again)',
    },
    (b) => b.endpointsDisabled,
  );
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
