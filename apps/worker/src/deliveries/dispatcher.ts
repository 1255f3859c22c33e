/**
 * The dispatcher: delivers emails and webhooks at least once. It claims due deliveries in Postgres
 * (FOR UPDATE SKIP LOCKED, each leased for `leaseMs`: a worker that dies mid-send loses its lease and
 * another one sends again), sends them, and records every attempt (packages/db deliveries.ts).
 *
 * Deliveries are scheduled in Postgres, not BullMQ: their retries span days and their log is the
 * merchant's, so the record and the schedule are one row (ARCHITECTURE.md, "Deliveries").
 */
import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import {
  claimDueDeliveries,
  DELIVERY_CHANNEL,
  deliveryBackoffMs,
  recordDeliveryAttempt,
  publicOnlyAgents,
  releaseDeliveryClaim,
  type AttemptOutcome,
  type ClaimedDelivery,
  type DisablePolicy,
} from '@timbra/db/deliveries';
import { runOnNotify } from '../stamping/notify-loop.ts';
import type { EmailSender } from './email.ts';
import { sendWebhook, type DeliveryAgents, type SendResult } from './webhook.ts';

export interface RetryWindow {
  baseMs: number;
  maxMs: number;
  /** A delivery still failing this long after it was written is dead. */
  forMs: number;
}

export interface DispatcherDeps {
  prisma: PrismaClient;
  logger: Logger;
  /** Absent: emails wait (pending, counted by the backlog gauge) until a worker with SMTP sends them. */
  email?: EmailSender;
  webhook: {
    timeoutMs: number;
    retry: RetryWindow;
    disable: DisablePolicy;
    /** Non-public ranges endpoints may be at (WEBHOOK_ALLOWED_ADDRESSES); any other is refused at connect. */
    allowedAddresses: readonly string[];
  };
  emailRetry: RetryWindow;
  /** Deliveries in flight at once (each one claimed only when a slot is free). */
  concurrency: number;
  /** While sends are in flight and nothing more was due, how often to look again (default 1 s). */
  pollMs?: number;
  leaseMs: number;
  /** Each attempt's result (metrics). */
  onAttempt?: (channel: ClaimedDelivery['channel'], outcome: AttemptOutcome['outcome'], durationMs: number) => void;
  /** An endpoint disabled after its failure streak (alert). */
  onEndpointDisabled?: (endpoint: { id: string; url: string; consecutiveFailures: number }) => void;
  now?: () => number;
}

export class Dispatcher {
  private readonly agents: DeliveryAgents;

  constructor(private readonly deps: DispatcherDeps) {
    this.agents = publicOnlyAgents(deps.webhook.allowedAddresses);
  }

  /**
   * Sends what is due, keeping up to `concurrency` deliveries in flight: a free slot is filled as soon
   * as a send ends, so one slow endpoint (a timeout) or a PDF being rendered holds one slot, not a
   * whole batch. While the last claim came back full (a backlog) it claims again once a quarter of
   * the slots are free (one query per few sends, not one per send); otherwise it looks again every
   * `pollMs` while sends are in flight. Returns, with how many deliveries it attempted, when nothing
   * is in flight and the last claim found nothing more.
   */
  async drainAll(): Promise<number> {
    const { concurrency, pollMs = 1000 } = this.deps;
    const now = this.deps.now ?? Date.now;
    const inFlight = new Set<Promise<void>>();
    let total = 0;
    let backlog = true;
    let claimedAt = 0;
    const refill = Math.max(1, Math.floor(concurrency / 4));
    for (;;) {
      const free = concurrency - inFlight.size;
      if (free > 0 && (inFlight.size === 0 || (backlog ? free >= refill : now() - claimedAt >= pollMs))) {
        claimedAt = now();
        let claimed: ClaimedDelivery[];
        try {
          claimed = await claimDueDeliveries(this.deps.prisma, free, this.deps.leaseMs);
        } catch (error) {
          // (Postgres away: let the sends in flight end before the next round claims more.)
          await Promise.allSettled(inFlight);
          throw error;
        }
        backlog = claimed.length === free;
        for (const d of claimed) {
          // Emails wait for a worker that can send them: give the claim back at once.
          const sendable = d.channel === 'webhook' || this.deps.email !== undefined;
          if (sendable) total++;
          const running: Promise<void> = (sendable ? this.deliver(d) : this.release(d))
            .catch((error: unknown) =>
              this.deps.logger.error({ err: error, deliveryId: d.id }, 'delivery round failed; its lease will lapse'),
            )
            .finally(() => inFlight.delete(running));
          inFlight.add(running);
        }
        if (backlog && concurrency - inFlight.size >= refill) continue;
      }
      if (inFlight.size === 0) return total;
      // Wake on the first send to end, or when the next look is due.
      const wait = backlog ? undefined : Math.max(0, pollMs - (now() - claimedAt));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ...inFlight,
        ...(wait === undefined ? [] : [new Promise<void>((resolve) => (timer = setTimeout(resolve, wait)))]),
      ]);
      clearTimeout(timer);
    }
  }

  private async release(d: ClaimedDelivery): Promise<void> {
    await releaseDeliveryClaim(this.deps.prisma, { id: d.id, attempt: d.attempt }, 60_000);
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const now = this.deps.now ?? Date.now;
    const started = now();
    let result: SendResult & { permanent?: boolean };
    try {
      result =
        d.channel === 'webhook' && d.endpoint
          ? await sendWebhook(
              { ...d, endpoint: d.endpoint },
              { timeoutMs: this.deps.webhook.timeoutMs, agents: this.agents, now },
            )
          : await this.deps.email!(d);
    } catch (error) {
      result = { ok: false, error: (error as Error).message };
    }
    const durationMs = Math.max(0, now() - started);
    const window = d.channel === 'webhook' ? this.deps.webhook.retry : this.deps.emailRetry;
    const attempt: AttemptOutcome = result.ok
      ? { outcome: 'delivered', statusCode: result.statusCode }
      : result.permanent
        ? { outcome: 'dead', statusCode: result.statusCode, error: result.error }
        : {
            outcome: 'failed',
            retryInMs: deliveryBackoffMs(window, d.attempt),
            giveUpAfterMs: window.forMs,
            statusCode: result.statusCode,
            error: result.error,
          };
    const recorded = await recordDeliveryAttempt(
      this.deps.prisma,
      { id: d.id, attempt: d.attempt },
      { ...attempt, durationMs },
      this.deps.webhook.disable,
    );
    this.deps.onAttempt?.(d.channel, recorded.outcome, durationMs);
    const where = { deliveryId: d.id, eventId: d.event.id, type: d.event.type, channel: d.channel, attempt: d.attempt };
    if (attempt.outcome !== 'delivered' && recorded.outcome === 'dead')
      this.deps.logger.error(
        { alert: 'delivery_dead', ...where, error: attempt.error, statusCode: attempt.statusCode },
        `a ${d.channel} delivery failed for good: replay it once the cause is fixed`,
      );
    else if (attempt.outcome === 'failed')
      this.deps.logger.warn(
        { ...where, error: attempt.error, retryInMs: attempt.retryInMs },
        `${d.channel} delivery failed; will retry`,
      );
    else this.deps.logger.debug(where, `${d.channel} delivered`);
    if (recorded.disabled) {
      this.deps.logger.error(
        { alert: 'webhook_endpoint_disabled', endpoint: recorded.disabled },
        'a webhook endpoint was disabled after a failure streak: fix it, enable it and replay its dead deliveries',
      );
      this.deps.onEndpointDisabled?.(recorded.disabled);
    }
  }
}

/**
 * Runs a dispatcher: on every NOTIFY of a new delivery (a hint) and every `pollMs`, which also picks
 * up retries as they come due. `stop()` ends the loop after the round in progress.
 */
export function runDispatcher(
  dispatcher: Pick<Dispatcher, 'drainAll'>,
  options: { databaseUrl: string; pollMs: number; logger: Logger },
) {
  return runOnNotify(() => dispatcher.drainAll(), { ...options, channel: DELIVERY_CHANNEL, what: 'delivery' });
}
