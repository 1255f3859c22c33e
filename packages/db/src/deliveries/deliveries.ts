/**
 * Deliveries: the customer's emails and the merchant's webhooks (migration 20261213000000). Events
 * and their deliveries are written by triggers in the transaction of the change they report; this
 * module owns what the dispatchers do after that: claiming due deliveries and recording each attempt
 * (the only writer of a delivery's status and of an endpoint's failure streak). Replays, resends and
 * endpoint changes are operator-actions.ts; the metrics' figures, figures.ts.
 *
 *   pending ──claim──▶ sending ──2xx / 250──▶ delivered
 *      ▲                  │  └──permanent, or out of time──▶ dead ──replay──▶ (a new pending delivery)
 *      └──failed, retry at─┘
 *   A `sending` row whose lease expired (its worker died mid-send) is claimed again: at least once.
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { col, execute, queryRows, type Db } from '../sql.ts';

/** The Postgres channel the event triggers NOTIFY on (payload: the event id; a hint only). */
export const DELIVERY_CHANNEL = 'timbra_deliveries';

export const EVENT_TYPES = [
  'invoice.stamped',
  'invoice.needs_data',
  'invoice.failed',
  'invoice.cancelled',
  'invoice.cancellation_rejected',
  'payment.recorded',
  'refund.recorded',
  'ticket.created',
  'global.issued',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/**
 * A test event (POST /v1/webhook-endpoints/:id/test): delivered to the endpoint that asked for it
 * only; not an event type an endpoint subscribes to.
 */
export const TEST_EVENT_TYPE = 'endpoint.test';
/** Every event type a delivery may carry. */
export type DeliveredEventType = EventType | typeof TEST_EVENT_TYPE;

export type DeliveryChannel = 'email' | 'webhook';

const claimedRow = z.object({
  id: col.uuid,
  channel: z.enum(['email', 'webhook']),
  attempts: col.int,
  recipient: col.text.nullable(),
  created_at: z.date(),
  event_id: col.uuid,
  event_type: z.enum([...EVENT_TYPES, TEST_EVENT_TYPE]),
  event_data: col.json,
  event_created_at: z.date(),
  event_api_version: col.text,
  invoice_id: col.uuid.nullable(),
  endpoint_id: col.uuid.nullable(),
  endpoint_url: col.text.nullable(),
  endpoint_secret: col.text.nullable(),
  endpoint_previous_secret: col.text.nullable(),
});

/** A delivery claimed for one attempt. */
export interface ClaimedDelivery {
  id: string;
  channel: DeliveryChannel;
  /** This attempt's number (1 for the first). */
  attempt: number;
  /** When the delivery was written (its retry window starts here). */
  createdAt: Date;
  event: {
    id: string;
    type: DeliveredEventType;
    data: unknown;
    createdAt: Date;
    /** The API version its data was written in. */
    apiVersion: string;
    invoiceId: string | null;
  };
  /** A webhook's endpoint; `previousSecret` while a rotation's grace period lasts. */
  endpoint: { id: string; url: string; secret: string; previousSecret: string | null } | null;
  /** An email's address. */
  recipient: string | null;
}

/**
 * Claims up to `limit` due deliveries: pending ones whose time has come, and sending ones whose lease
 * expired. Each is counted as an attempt and leased for `leaseMs` (longer than one send can take).
 */
export async function claimDueDeliveries(db: Db, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const rows = await queryRows(
    db,
    claimedRow,
    Prisma.sql`
      WITH due AS (
        SELECT id FROM deliveries
        WHERE (status = 'pending' AND available_at <= now()) OR (status = 'sending' AND lease_until < now())
        ORDER BY available_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED),
      claimed AS (
        UPDATE deliveries d SET status = 'sending', attempts = d.attempts + 1,
          lease_until = now() + make_interval(secs => ${leaseMs / 1000}::float8), updated_at = now()
        FROM due WHERE d.id = due.id
        RETURNING d.*)
      SELECT c.id, c.channel, c.attempts, c.recipient, c.created_at, e.id AS event_id, e.type AS event_type,
             e.data AS event_data, e.created_at AS event_created_at, e.api_version AS event_api_version, e.invoice_id,
             w.id AS endpoint_id, w.url AS endpoint_url, w.secret AS endpoint_secret,
             CASE WHEN w.previous_secret_expires_at > ${new Date()} THEN w.previous_secret END AS endpoint_previous_secret
      FROM claimed c JOIN events e ON e.id = c.event_id LEFT JOIN webhook_endpoints w ON w.id = c.endpoint_id
      ORDER BY c.available_at`,
  );
  return rows.map((r) => ({
    id: r.id,
    channel: r.channel,
    attempt: r.attempts,
    createdAt: r.created_at,
    event: {
      id: r.event_id,
      type: r.event_type,
      data: r.event_data,
      createdAt: r.event_created_at,
      apiVersion: r.event_api_version,
      invoiceId: r.invoice_id,
    },
    endpoint:
      r.endpoint_id && r.endpoint_url && r.endpoint_secret
        ? {
            id: r.endpoint_id,
            url: r.endpoint_url,
            secret: r.endpoint_secret,
            previousSecret: r.endpoint_previous_secret,
          }
        : null,
    recipient: r.recipient,
  }));
}

/**
 * What one attempt came to. `failed` is tried again `retryInMs` from now, unless that is more than
 * `giveUpAfterMs` after the delivery was written: then it is recorded `dead`. Both are measured with
 * the database's clock (the one that wrote `created_at` and that the claim compares `available_at`
 * with). `dead` gives up at once (reason in `error`).
 */
export type AttemptOutcome =
  | { outcome: 'delivered'; statusCode?: number }
  | { outcome: 'failed'; retryInMs: number; giveUpAfterMs: number; statusCode?: number; error: string }
  | { outcome: 'dead'; statusCode?: number; error: string };

/** When a failing endpoint is disabled: failing for `afterMs` and at least `minFailures` attempts in a row. */
export interface DisablePolicy {
  afterMs: number;
  minFailures: number;
}

const recordedRow = z.object({ status: col.text, endpoint_id: col.uuid.nullable() });
const disabledRow = z.object({ id: col.uuid, url: col.text, consecutive_failures: col.int });

/**
 * Records one attempt of a claimed delivery: the log line, the delivery's new status and, for a
 * webhook, the endpoint's failure streak — disabling the endpoint (and burying its other pending
 * deliveries) when the streak passes `disable`. A delivery no longer `sending` in this attempt (an
 * operator acted, or another worker took the expired lease) keeps its status; the log keeps the line.
 *
 * @returns what was recorded (a failure past its window is `dead`) and the endpoint this attempt
 * disabled, if any.
 */
export async function recordDeliveryAttempt(
  prisma: PrismaClient,
  delivery: { id: string; attempt: number },
  result: AttemptOutcome & { durationMs: number },
  disable: DisablePolicy,
): Promise<{
  outcome: AttemptOutcome['outcome'];
  disabled?: { id: string; url: string; consecutiveFailures: number };
}> {
  const run = async (tx: Db) => {
    const error = result.outcome === 'delivered' ? null : result.error.slice(0, 2000);
    let status = Prisma.sql`${result.outcome}`;
    let availableAt = Prisma.sql`available_at`;
    if (result.outcome === 'failed') {
      const retryAt = Prisma.sql`now() + make_interval(secs => ${result.retryInMs / 1000}::float8)`;
      const late = Prisma.sql`${retryAt} - created_at > make_interval(secs => ${result.giveUpAfterMs / 1000}::float8)`;
      status = Prisma.sql`CASE WHEN ${late} THEN 'dead' ELSE 'pending' END`;
      availableAt = Prisma.sql`CASE WHEN ${late} THEN available_at ELSE ${retryAt} END`;
    }
    const [row] = await queryRows(
      tx,
      recordedRow,
      Prisma.sql`
        UPDATE deliveries SET status = ${status}, available_at = ${availableAt},
          delivered_at = ${result.outcome === 'delivered' ? Prisma.sql`now()` : Prisma.sql`NULL`},
          last_error = ${error}, lease_until = NULL, updated_at = now()
        WHERE id = ${delivery.id}::uuid AND status = 'sending' AND attempts = ${delivery.attempt}
        RETURNING status, endpoint_id`,
    );
    const outcome = result.outcome === 'failed' && row?.status === 'dead' ? 'dead' : result.outcome;
    await execute(
      tx,
      Prisma.sql`INSERT INTO delivery_attempts (delivery_id, attempt, outcome, status_code, error, duration_ms)
        VALUES (${delivery.id}::uuid, ${delivery.attempt}, ${outcome}, ${result.statusCode ?? null},
                ${error}, ${Math.round(result.durationMs)})`,
    );
    if (!row?.endpoint_id) return { outcome };
    const disabled = await endpointAfterAttempt(
      tx,
      row.endpoint_id,
      delivery.id,
      result.outcome === 'delivered',
      disable,
    );
    return disabled ? { outcome, disabled } : { outcome };
  };
  return prisma.$transaction(run);
}

/**
 * The endpoint's streak after an attempt: a success clears it; a failure lengthens it and, past the
 * policy, disables the endpoint (its pending deliveries buried). A delivery whose endpoint was
 * disabled while it was in flight is dead, not retried. @returns the endpoint this attempt disabled.
 */
async function endpointAfterAttempt(
  tx: Db,
  endpointId: string,
  deliveryId: string,
  delivered: boolean,
  disable: DisablePolicy,
): Promise<{ id: string; url: string; consecutiveFailures: number } | undefined> {
  if (delivered) {
    await execute(
      tx,
      Prisma.sql`UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, updated_at = now()
        WHERE id = ${endpointId}::uuid AND (consecutive_failures > 0 OR failing_since IS NOT NULL)`,
    );
    return undefined;
  }
  // Two statements: a row updated twice in one statement keeps only one of the changes.
  await execute(
    tx,
    Prisma.sql`UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
      failing_since = coalesce(failing_since, now()), updated_at = now() WHERE id = ${endpointId}::uuid`,
  );
  const [disabled] = await queryRows(
    tx,
    disabledRow,
    Prisma.sql`
      UPDATE webhook_endpoints SET status = 'disabled', disabled_at = now(),
        disabled_reason = 'failing since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                          || ' (' || consecutive_failures || ' attempts in a row)'
      WHERE id = ${endpointId}::uuid AND status = 'enabled' AND consecutive_failures >= ${disable.minFailures}
        AND failing_since <= now() - make_interval(secs => ${disable.afterMs / 1000}::float8)
      RETURNING id, url, consecutive_failures`,
  );
  if (!disabled) {
    // Disabled while this attempt was in flight (by another attempt's streak, or an operator): no retry.
    await execute(
      tx,
      Prisma.sql`UPDATE deliveries d SET status = 'dead', last_error = 'endpoint disabled: ' || coalesce(w.disabled_reason, ''),
          updated_at = now()
        FROM webhook_endpoints w
        WHERE d.id = ${deliveryId}::uuid AND d.status = 'pending' AND w.id = d.endpoint_id AND w.status = 'disabled'`,
    );
    return undefined;
  }
  await buryPendingDeliveries(tx, disabled.id, 'endpoint disabled after a failure streak');
  return { id: disabled.id, url: disabled.url, consecutiveFailures: disabled.consecutive_failures };
}

/**
 * Gives a claim back unattempted (a worker that cannot send this channel, e.g. no SMTP): pending
 * again in `delayMs`, the attempt not counted.
 */
export async function releaseDeliveryClaim(db: Db, delivery: { id: string; attempt: number }, delayMs: number) {
  await execute(
    db,
    Prisma.sql`UPDATE deliveries SET status = 'pending', attempts = attempts - 1, lease_until = NULL,
        available_at = now() + make_interval(secs => ${delayMs / 1000}::float8), updated_at = now()
      WHERE id = ${delivery.id}::uuid AND status = 'sending' AND attempts = ${delivery.attempt}`,
  );
}

/** The pending deliveries of a disabled endpoint become dead (replayable once it is enabled again). */
export async function buryPendingDeliveries(tx: Db, endpointId: string, reason: string): Promise<void> {
  await execute(
    tx,
    Prisma.sql`UPDATE deliveries SET status = 'dead', last_error = ${reason}, lease_until = NULL, updated_at = now()
      WHERE endpoint_id = ${endpointId}::uuid AND status = 'pending'`,
  );
}

/** Seconds until the retry of a delivery that failed `attempt` times: `baseMs` doubling, capped, ±50% jitter. */
export function deliveryBackoffMs(
  policy: { baseMs: number; maxMs: number },
  attempt: number,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential * (0.5 + random()));
}

// ——— Replays and resends ———
