/**
 * Deliveries: the customer's emails and the merchant's webhooks (migration 20261213000000). Events
 * and their deliveries are written by triggers in the transaction of the change they report; this
 * module owns everything after that: claiming due deliveries, recording each attempt (the only
 * writer of a delivery's status and of an endpoint's failure streak), replays and resends, the
 * webhook endpoints, and the figures the metrics read.
 *
 *   pending ──claim──▶ sending ──2xx / 250──▶ delivered
 *      ▲                  │  └──permanent, or out of time──▶ dead ──replay──▶ (a new pending delivery)
 *      └──failed, retry at─┘
 *   A `sending` row whose lease expired (its worker died mid-send) is claimed again: at least once.
 */
import { randomBytes } from 'node:crypto';
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

export type DeliveryChannel = 'email' | 'webhook';

const claimedRow = z.object({
  id: col.uuid,
  channel: z.enum(['email', 'webhook']),
  attempts: col.int,
  recipient: col.text.nullable(),
  created_at: z.date(),
  event_id: col.uuid,
  event_type: z.enum(EVENT_TYPES),
  event_data: col.json,
  event_created_at: z.date(),
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
  event: { id: string; type: EventType; data: unknown; createdAt: Date; invoiceId: string | null };
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
             e.data AS event_data, e.created_at AS event_created_at, e.invoice_id,
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
    if (result.outcome === 'delivered') {
      await execute(
        tx,
        Prisma.sql`UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, updated_at = now()
          WHERE id = ${row.endpoint_id}::uuid AND (consecutive_failures > 0 OR failing_since IS NOT NULL)`,
      );
      return { outcome };
    }
    // Two statements: a row updated twice in one statement keeps only one of the changes.
    await execute(
      tx,
      Prisma.sql`UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
        failing_since = coalesce(failing_since, now()), updated_at = now() WHERE id = ${row.endpoint_id}::uuid`,
    );
    const [disabled] = await queryRows(
      tx,
      disabledRow,
      Prisma.sql`
        UPDATE webhook_endpoints SET status = 'disabled', disabled_at = now(),
          disabled_reason = 'failing since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                            || ' (' || consecutive_failures || ' attempts in a row)'
        WHERE id = ${row.endpoint_id}::uuid AND status = 'enabled' AND consecutive_failures >= ${disable.minFailures}
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
          WHERE d.id = ${delivery.id}::uuid AND d.status = 'pending' AND w.id = d.endpoint_id AND w.status = 'disabled'`,
      );
      return { outcome };
    }
    await buryPendingDeliveries(tx, disabled.id, 'endpoint disabled after a failure streak');
    return {
      outcome,
      disabled: { id: disabled.id, url: disabled.url, consecutiveFailures: disabled.consecutive_failures },
    };
  };
  return prisma.$transaction(run);
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
async function buryPendingDeliveries(tx: Db, endpointId: string, reason: string): Promise<void> {
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

/**
 * A new delivery of the same event to the same endpoint or address (a replay; an email's resend),
 * whatever became of the first. For a webhook, the endpoint must be enabled.
 *
 * @returns the new delivery's id, or `endpoint_disabled`.
 */
export async function replayDelivery(
  db: Db,
  deliveryId: string,
  by: string,
): Promise<{ id: string } | { refused: 'endpoint_disabled' } | undefined> {
  const [original] = await queryRows(
    db,
    originalRow,
    Prisma.sql`SELECT d.event_id, w.status AS endpoint_status FROM deliveries d
      LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.id = ${deliveryId}::uuid`,
  );
  if (!original) return undefined;
  if (original.endpoint_status === 'disabled') return { refused: 'endpoint_disabled' };
  const [replay] = await queryRows(
    db,
    idRow,
    Prisma.sql`INSERT INTO deliveries (channel, event_id, endpoint_id, recipient, replay_of, requested_by)
      SELECT channel, event_id, endpoint_id, recipient, id, ${by} FROM deliveries WHERE id = ${deliveryId}::uuid
      RETURNING id`,
  );
  await notifyDeliveries(db, original.event_id);
  return { id: replay!.id };
}

const resendEventRow = z.object({ id: col.uuid, type: z.enum(EVENT_TYPES), email: col.text.nullable() });
const originalRow = z.object({ event_id: col.uuid, endpoint_status: col.text.nullable() });
const idRow = z.object({ id: col.uuid });
const notifiedRow = z.object({ n: col.bigint });
const countRow = z.object({ n: col.int });

/** Wakes the dispatchers (delivered at the caller's commit). */
async function notifyDeliveries(db: Db, eventId: string): Promise<void> {
  await queryRows(db, notifiedRow, Prisma.sql`SELECT count(pg_notify(${DELIVERY_CHANNEL}, ${eventId})) AS n`);
}

/**
 * Emails an invoice's latest stamped or cancelled event again, to `to` or to its payment's address.
 * @returns the new delivery's id; `no_event` when the invoice was never stamped; `no_address` when
 * neither `to` nor the payment has one.
 */
export async function resendInvoiceEmail(
  db: Db,
  invoiceId: string,
  options: { to?: string; by: string },
): Promise<{ id: string; recipient: string; eventType: EventType } | { refused: 'no_event' | 'no_address' }> {
  const [event] = await queryRows(
    db,
    resendEventRow,
    Prisma.sql`
      SELECT e.id, e.type, p.email FROM events e
      JOIN invoices i ON i.id = e.invoice_id LEFT JOIN payments p ON p.id = i.payment_id
      WHERE e.invoice_id = ${invoiceId}::uuid AND e.type IN ('invoice.stamped', 'invoice.cancelled')
      ORDER BY e.created_at DESC, e.type = 'invoice.cancelled' DESC LIMIT 1`,
  );
  if (!event) return { refused: 'no_event' };
  const recipient = options.to ?? event.email;
  if (!recipient) return { refused: 'no_address' };
  const [first] = await queryRows(
    db,
    idRow,
    Prisma.sql`SELECT id FROM deliveries WHERE event_id = ${event.id}::uuid AND channel = 'email' AND replay_of IS NULL
      ORDER BY created_at LIMIT 1`,
  );
  const [row] = await queryRows(
    db,
    idRow,
    Prisma.sql`INSERT INTO deliveries (channel, event_id, recipient, replay_of, requested_by)
      VALUES ('email', ${event.id}::uuid, ${recipient}, ${first?.id ?? null}::uuid, ${options.by}) RETURNING id`,
  );
  await notifyDeliveries(db, event.id);
  return { id: row!.id, recipient, eventType: event.type };
}

// ——— Webhook endpoints ———

/** A new endpoint secret: `whsec_` and 32 random bytes (base64url). */
export function newEndpointSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * A new secret for an endpoint; the old one keeps signing (a second `v1`) for `graceMs`, so
 * receivers can switch without refusing a delivery. @returns the new secret, or undefined (no such endpoint).
 */
/**
 * A new secret for an endpoint; the old one keeps signing beside it for `graceMs`. The grace is on the
 * application's clock, as the API shows it and the dispatcher reads it (one clock for one rule).
 */
export async function rotateEndpointSecret(db: Db, endpointId: string, graceMs: number): Promise<string | undefined> {
  const secret = newEndpointSecret();
  const n = await execute(
    db,
    Prisma.sql`UPDATE webhook_endpoints SET previous_secret = secret, secret = ${secret},
        previous_secret_expires_at = ${new Date(Date.now() + graceMs)}, updated_at = now()
      WHERE id = ${endpointId}::uuid`,
  );
  return n > 0 ? secret : undefined;
}

/** Enables or disables an endpoint; disabling buries its pending deliveries, enabling clears the streak. */
export async function setEndpointStatus(
  prisma: PrismaClient,
  endpointId: string,
  status: 'enabled' | 'disabled',
  reason: string,
): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const n =
      status === 'enabled'
        ? await execute(
            tx,
            Prisma.sql`UPDATE webhook_endpoints SET status = 'enabled', disabled_at = NULL, disabled_reason = NULL,
              consecutive_failures = 0, failing_since = NULL, updated_at = now() WHERE id = ${endpointId}::uuid`,
          )
        : await execute(
            tx,
            Prisma.sql`UPDATE webhook_endpoints SET status = 'disabled', disabled_at = coalesce(disabled_at, now()),
              disabled_reason = ${reason}, updated_at = now() WHERE id = ${endpointId}::uuid`,
          );
    if (n > 0 && status === 'disabled') await buryPendingDeliveries(tx, endpointId, reason);
    return n > 0;
  });
}

// ——— Figures ———

const backlogRow = z.object({
  channel: z.enum(['email', 'webhook']),
  pending: col.int,
  oldest: z.number(),
  dead: col.int,
});

/**
 * Per channel: deliveries not delivered yet (pending or sending), the age in seconds of the oldest of
 * them, and the dead ones no replay has delivered since (what waits for a person).
 */
export async function deliveryBacklog(
  db: Db,
): Promise<Record<DeliveryChannel, { pending: number; oldestAgeSeconds: number; dead: number }>> {
  const rows = await queryRows(
    db,
    backlogRow,
    Prisma.sql`
      SELECT c.channel,
        (SELECT count(*)::int FROM deliveries d WHERE d.channel = c.channel AND d.status IN ('pending', 'sending')) AS pending,
        coalesce((SELECT EXTRACT(EPOCH FROM now() - min(d.created_at))::float8 FROM deliveries d
                  WHERE d.channel = c.channel AND d.status IN ('pending', 'sending')), 0) AS oldest,
        (SELECT count(*)::int FROM deliveries d WHERE d.channel = c.channel AND d.status = 'dead'
           AND NOT EXISTS (SELECT 1 FROM deliveries r WHERE r.replay_of = d.id AND r.status IN ('delivered', 'pending', 'sending'))) AS dead
      FROM (VALUES ('email'), ('webhook')) AS c(channel)`,
  );
  const out = {
    email: { pending: 0, oldestAgeSeconds: 0, dead: 0 },
    webhook: { pending: 0, oldestAgeSeconds: 0, dead: 0 },
  };
  for (const r of rows) out[r.channel] = { pending: r.pending, oldestAgeSeconds: r.oldest, dead: r.dead };
  return out;
}

/** Endpoints disabled after a failure streak (an operator's own disabling is not counted). */
export async function endpointsDisabledByFailures(db: Db): Promise<number> {
  const [row] = await queryRows(
    db,
    countRow,
    Prisma.sql`SELECT count(*)::int AS n FROM webhook_endpoints WHERE status = 'disabled' AND disabled_reason LIKE 'failing since %'`,
  );
  return row?.n ?? 0;
}
