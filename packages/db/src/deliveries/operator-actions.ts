/**
 * What an operator or a merchant does to deliveries and endpoints: a dead delivery replayed, an
 * invoice's email sent again, an endpoint's secret rotated (the old one kept for its grace), an
 * endpoint disabled (its pending deliveries buried) or enabled. Each wakes the dispatchers.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { buryPendingDeliveries, DELIVERY_CHANNEL, EVENT_TYPES, TEST_EVENT_TYPE, type EventType } from './deliveries.ts';
import { col, execute, queryRows, type Db } from '../sql.ts';

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

/**
 * A test event for one endpoint, with its one webhook delivery (signed and sent by the worker like any
 * other): `data.object` names the endpoint. Refused while the endpoint is disabled.
 */
export async function sendTestEvent(
  db: Db,
  endpointId: string,
  by: string,
): Promise<{ id: string } | { refused: 'endpoint_disabled' } | undefined> {
  const [endpoint] = await queryRows(
    db,
    endpointRow,
    Prisma.sql`SELECT status, url FROM webhook_endpoints WHERE id = ${endpointId}::uuid`,
  );
  if (!endpoint) return undefined;
  if (endpoint.status === 'disabled') return { refused: 'endpoint_disabled' };
  const object = {
    object: 'webhook_endpoint',
    id: endpointId,
    url: endpoint.url,
    message: 'A test event from Timbra.',
  };
  const [delivery] = await queryRows(
    db,
    eventDeliveryRow,
    Prisma.sql`WITH event AS (
        INSERT INTO events (type, data) VALUES (${TEST_EVENT_TYPE}, ${JSON.stringify(object)}::jsonb) RETURNING id)
      INSERT INTO deliveries (channel, event_id, endpoint_id, requested_by)
      SELECT 'webhook', event.id, ${endpointId}::uuid, ${by} FROM event
      RETURNING id, event_id`,
  );
  await notifyDeliveries(db, delivery!.event_id);
  return { id: delivery!.id };
}

const endpointRow = z.object({ status: col.text, url: col.text });
const eventDeliveryRow = z.object({ id: col.uuid, event_id: col.uuid });
const resendEventRow = z.object({ id: col.uuid, type: z.enum(EVENT_TYPES), email: col.text.nullable() });
const originalRow = z.object({ event_id: col.uuid, endpoint_status: col.text.nullable() });
const idRow = z.object({ id: col.uuid });
const notifiedRow = z.object({ n: col.bigint });

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
