import { z } from 'zod';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { col, queryRows, type Tx } from './sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const tryLockIdempotencyKeyRow = z.object({ acquired: col.bool });

/**
 * Forgets Idempotency-Key records past their `expires_at` (the API's IDEMPOTENCY_TTL_HOURS): a request
 * repeated after that is a new request. Run hourly by the API and on demand by `ops keys:purge`.
 * Returns how many were deleted.
 */
export async function purgeExpiredIdempotencyKeys(prisma: PrismaClient, now = new Date()): Promise<number> {
  const { count } = await prisma.idempotencyKey.deleteMany({ where: { expiresAt: { lt: now } } });
  return count;
}

/**
 * Takes the transaction-scoped advisory lock of one client's Idempotency-Key without waiting: false
 * when another request with the same key holds it (its transaction is still running).
 */
export async function tryLockIdempotencyKey(tx: Tx, clientId: string, key: string): Promise<boolean> {
  const [row] = await queryRows(
    tx,
    tryLockIdempotencyKeyRow,
    Prisma.sql`SELECT pg_try_advisory_xact_lock(hashtextextended(${`${clientId}:${key}`}, 0)) AS acquired`,
  );
  return row?.acquired ?? false;
}
