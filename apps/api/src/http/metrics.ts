import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { csdExpiry, type Csd } from '@timbra/cfdi-core';
import type { Watched } from '@timbra/db/csds';

/** A gauge of the seconds until each watched certificate ends (negative once ended), read at each scrape. */
function expiryGauge(registry: Registry, name: string, what: string, then: string, read: () => Promise<Watched[]>) {
  new Gauge({
    name,
    help: `Seconds until ${what} expires (negative once expired): ${then}`,
    labelNames: ['no_certificado', 'organization'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const now = new Date();
      for (const c of await read())
        this.set({ no_certificado: c.noCertificado, organization: c.organizationId }, csdExpiry(c, now).secondsLeft);
    },
  });
}

/** The API's Prometheus metrics, on their own registry (no globals: tests build as many as they like). */
export function createMetrics(
  options: {
    csd?: Pick<Csd, 'noCertificado' | 'rfc' | 'validTo'>;
    /** The home organization, whose CSD `csd` is. */
    organizationId?: string;
    /** Every organization's CSD to watch (platform mode: `csdsToWatch`), read at each scrape. */
    watched?: () => Promise<Watched[]>;
    /** Every organization's e.firma to watch (`efirmasToWatch`), read at each scrape. */
    efirmas?: () => Promise<Watched[]>;
  } = {},
) {
  const registry = new Registry();
  // Node's event-loop delay is sampled every 100 ms, not prom-client's default 10: a timer that woke
  // the process 100 times a second, idle or not, for about half of an idle API's CPU (docs/performance.md).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  const { csd, watched, efirmas } = options;
  // The home CSD from files is watched beside the stored ones (a store that cannot be read leaves it).
  const home = csd ? [{ ...csd, organizationId: options.organizationId ?? '' }] : [];
  if (csd || watched)
    expiryGauge(
      registry,
      'timbra_csd_expires_in_seconds',
      "an organization's CSD",
      'renew it before (TimbraCsdExpiring)',
      async () => [...home, ...((await watched?.().catch(() => [])) ?? [])],
    );
  if (efirmas)
    expiryGauge(
      registry,
      'timbra_efirma_expires_in_seconds',
      "an organization's e.firma",
      "its reconciliation with the SAT's record stops then (TimbraEfirmaExpiring)",
      () => efirmas().catch(() => []),
    );
  return {
    registry,
    httpDuration: new Histogram({
      name: 'timbra_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    webhooks: new Counter({
      name: 'timbra_webhooks_total',
      help: 'Webhook deliveries by provider and result (accepted, duplicate, ignored, failed, bad_signature)',
      labelNames: ['provider', 'result'] as const,
      registers: [registry],
    }),
    webhookEventsFailed: new Counter({
      name: 'timbra_webhook_events_failed_total',
      help: 'Signed webhook events that could not be recorded (stored as failed), by provider and reason',
      labelNames: ['provider', 'reason'] as const,
      registers: [registry],
    }),
    globalsIssued: new Counter({
      name: 'timbra_global_periods_issued_total',
      help: "Periods whose factura global this instance issued, by who asked (admin: POST /v1/globals; the worker counts its close timer's, schedule)",
      labelNames: ['by'] as const,
      registers: [registry],
    }),
    ticketsSelfInvoiced: new Counter({
      name: 'timbra_tickets_self_invoiced_total',
      help: 'Tickets self-invoiced on the /facturar page',
      registers: [registry],
    }),
    idempotentReplays: new Counter({
      name: 'timbra_idempotent_replays_total',
      help: 'Requests answered from a stored Idempotency-Key response',
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * `GET /metrics` on a listener of its own (METRICS_HOST:METRICS_PORT, default 127.0.0.1): the
 * metrics name routes, providers and volumes, so they are not served on the public API port.
 */
export function listenMetrics(metrics: Pick<Metrics, 'registry'>, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
