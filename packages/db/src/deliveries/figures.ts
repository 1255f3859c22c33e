/** The figures the worker's metrics read of deliveries: the backlog, and endpoints disabled by failures. */
import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import type { DeliveryChannel } from './deliveries.ts';
import { col, queryRows, type Db } from '../sql.ts';

const countRow = z.object({ n: col.int });

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
