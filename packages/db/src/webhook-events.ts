/** Received provider events: one row per (provider, event id), the claim that makes a delivery once. */
import { z } from 'zod';
import { Prisma } from './generated/client.ts';
import { col, queryRows, type RawDb } from './sql.ts';
import { storableJson, storableText } from './text.ts';

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
      ON CONFLICT (provider, event_id) DO NOTHING
      RETURNING provider, event_id`,
  );
  const unclaimed = new Set(inserted.map((e) => `${e.provider}\u0000${e.event_id}`));
  return events.map((e) => unclaimed.delete(`${e.provider}\u0000${storableText(e.eventId)}`));
}
