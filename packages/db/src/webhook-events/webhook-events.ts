/** Received provider events: one row per (provider, event id), the claim that makes a delivery once. */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { afterCursor, type PageQuery } from '../pages.ts';
import { col, queryRows, type Db, type RawDb } from '../sql.ts';
import { storableJson, storableText } from '../text.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const claimWebhookEventsRow = z.object({ ord: col.int });

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
 * Inserts events in order, each in its organization (`organizationId`; none: the session's); one
 * already recorded there (or named twice in the batch) is skipped.
 * @returns for each input event, whether this call recorded it (the first delivery claims it).
 */
export async function claimWebhookEvents(
  tx: RawDb,
  events: readonly (ReceivedEvent & { organizationId?: string })[],
): Promise<boolean[]> {
  if (events.length === 0) return [];
  const claimed = await queryRows(
    tx,
    claimWebhookEventsRow,
    Prisma.sql`
      WITH input AS (
        SELECT coalesce(e.given_organization_id, (SELECT timbra_organization_or_sole())) AS organization_id, e.*
        FROM unnest(${events.map((e) => e.provider)}::text[], ${events.map((e) => storableText(e.eventId))}::text[],
                    ${events.map((e) => storableText(e.type))}::text[], ${events.map((e) => e.result)}::text[],
                    ${events.map((e) => (e.reason === undefined ? null : storableText(e.reason)))}::text[],
                    ${events.map((e) => storableJson(e.payload))}::jsonb[], ${events.map((e) => e.organizationId ?? null)}::uuid[])
             WITH ORDINALITY AS e(provider, event_id, type, result, reason, payload, given_organization_id, ord)
      ), inserted AS (
        INSERT INTO webhook_events (id, organization_id, provider, event_id, type, result, reason, payload)
        SELECT timbra_uuid7(), organization_id, provider, event_id, type, result, reason, payload
        FROM input ORDER BY ord
        ON CONFLICT (organization_id, provider, event_id) DO NOTHING
        RETURNING organization_id, provider, event_id
      )
      -- The first mention of each event inserted claims it.
      SELECT min(input.ord)::int AS ord FROM inserted JOIN input USING (organization_id, provider, event_id)
      GROUP BY organization_id, provider, event_id`,
  );
  const first = new Set(claimed.map((c) => c.ord - 1));
  return events.map((_, i) => first.has(i));
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
