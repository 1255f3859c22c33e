/**
 * Webhook delivery, as a provider does it: each event is POSTed to the endpoint, signed at send time;
 * a non-2xx answer or a network failure is retried on a schedule (Stripe retries for up to three
 * days; here the schedule is seconds, configurable). Every attempt is kept, for tests and people.
 */
import type { Logger } from 'pino';

export interface OutgoingWebhook {
  /** The provider's event or notification id. */
  id: string;
  provider: 'stripe' | 'mercadopago';
  url: string;
  body: string;
  /** Headers for this attempt: signed now, so a retry carries a fresh timestamp, as providers do. */
  headers: () => Record<string, string>;
}

export interface DeliveryAttempt {
  at: string;
  status: number | null;
  error?: string;
}

export interface DeliveryRecord {
  id: string;
  provider: 'stripe' | 'mercadopago';
  /** Each send of the event: first delivery, retries, and redeliveries asked for. */
  attempts: DeliveryAttempt[];
  /** Whether some attempt was answered 2xx. */
  delivered: boolean;
  /** Retries still scheduled. */
  pending: boolean;
}

export class Deliveries {
  private readonly records = new Map<string, DeliveryRecord>();
  private readonly webhooks = new Map<string, OutgoingWebhook>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly retryDelaysMs: readonly number[],
    private readonly logger: Logger,
  ) {}

  /** Remembers `webhook` without sending it (held: the caller delivers it later, in any order). */
  hold(webhook: OutgoingWebhook): void {
    this.webhooks.set(webhook.id, webhook);
    if (!this.records.has(webhook.id))
      this.records.set(webhook.id, {
        id: webhook.id,
        provider: webhook.provider,
        attempts: [],
        delivered: false,
        pending: false,
      });
  }

  /** Sends `webhook` now, retrying on failure. */
  send(webhook: OutgoingWebhook): Promise<void> {
    this.hold(webhook);
    return this.attempt(webhook.id, 0);
  }

  /** Sends a known event again (a redelivery; held events are sent for the first time). */
  redeliver(id: string): Promise<void> | undefined {
    return this.webhooks.has(id) ? this.attempt(id, 0) : undefined;
  }

  list(): DeliveryRecord[] {
    return [...this.records.values()];
  }

  get(id: string): DeliveryRecord | undefined {
    return this.records.get(id);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    await Promise.allSettled([...this.inFlight]);
  }

  private attempt(id: string, retry: number): Promise<void> {
    const run = this.post(id, retry);
    this.inFlight.add(run);
    return run.finally(() => this.inFlight.delete(run));
  }

  private async post(id: string, retry: number): Promise<void> {
    const webhook = this.webhooks.get(id)!;
    const record = this.records.get(id)!;
    let attempt: DeliveryAttempt;
    try {
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: webhook.headers(),
        body: webhook.body,
        signal: AbortSignal.timeout(15_000),
      });
      await response.arrayBuffer();
      attempt = { at: new Date().toISOString(), status: response.status };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
      attempt = { at: new Date().toISOString(), status: null, error: cause };
    }
    record.attempts.push(attempt);
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    if (ok) record.delivered = true;
    const delay = this.retryDelaysMs[retry];
    record.pending = !ok && delay !== undefined && !this.stopped;
    this.logger.info({ event: id, provider: webhook.provider, status: attempt.status, retry }, 'webhook sent');
    if (record.pending) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.attempt(id, retry + 1);
      }, delay);
      this.timers.add(timer);
    }
  }
}
