/** Received provider events: one row per (provider, event id), the claim that makes a delivery once. */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { afterCursor, type PageQuery } from '../pages.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';
import { storableJson, storableText } from '../text.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const claimWebhookEventsRow = z.object({ provider: col.text, event_id: col.text });

export interface ReceivedEvent {
  provider: string;
  eventId: string;
  type: string;
  /** `accepted`, `ignored`, or `failed` (with `reason`): signed, but it could not be recorded. */
  result: 'accepted' | 'ignored' | 'failed';
  /** Why a failed event failed: a stable code, a colon, a sentence. */
  reason?: string;
  payload: unknown;
}

/**
 * Inserts events in order; one already recorded (or named twice in the batch) is skipped.
 * @returns for each input event, whether this call recorded it (the first delivery claims it).
 */
export async function claimWebhookEvents(tx: RawDb, events: readonly ReceivedEvent[]): Promise<boolean[]> {
  if (events.length === 0) return [];
  const inserted = await queryRows(
    tx,
    claimWebhookEventsRow,
    Prisma.sql`
      INSERT INTO webhook_events (id, provider, event_id, type, result, reason, payload)
      SELECT timbra_uuid7(), provider, event_id, type, result, reason, payload
      FROM unnest(${events.map((e) => e.provider)}::text[], ${events.map((e) => storableText(e.eventId))}::text[],
                  ${events.map((e) => storableText(e.type))}::text[], ${events.map((e) => e.result)}::text[],
                  ${events.map((e) => (e.reason === undefined ? null : storableText(e.reason)))}::text[],
                  ${events.map((e) => storableJson(e.payload))}::jsonb[]) WITH ORDINALITY
           AS e(provider, event_id, type, result, reason, payload, ord)
      ORDER BY ord
      ON CONFLICT (organization_id, provider, event_id) DO NOTHING
      RETURNING provider, event_id`,
  );
  const unclaimed = new Set(inserted.map((e) => `${e.provider}\u0000${e.event_id}`));
  return events.map((e) => unclaimed.delete(`${e.provider}\u0000${storableText(e.eventId)}`));
}

export interface WebhookEventFilter {
  result?: string | undefined;
  provider?: string | undefined;
}

/** The providers' events as received, newest first: what each one did (recorded, ignored…) and why. */
export function listWebhookEvents(db: Db, filter: WebhookEventFilter, page: PageQuery) {
  return db.webhookEvent.findMany({
    where: {
      ...(filter.result ? { result: filter.result } : {}),
      ...(filter.provider ? { provider: filter.provider } : {}),
      ...afterCursor(page.cursor, 'receivedAt'),
    },
    orderBy: [{ receivedAt: 'desc' }, { id: 'desc' }],
    take: page.limit + 1,
  });
}

/** The providers' events that could not be recorded (signed, but poison), newest first. */
export function failedWebhookEvents(db: Db, since?: Date, limit = 500) {
  return db.webhookEvent.findMany({
    where: { result: 'failed', ...(since ? { receivedAt: { gte: since } } : {}) },
    orderBy: { receivedAt: 'desc' },
    take: limit,
    select: { provider: true, eventId: true, type: true, reason: true, receivedAt: true },
  });
}
