import type { PrismaClient } from './generated/client.ts';

/**
 * Forgets Idempotency-Key records past their `expires_at` (the API's IDEMPOTENCY_TTL_HOURS): a request
 * repeated after that is a new request. Run hourly by the API and on demand by `ops keys:purge`.
 * Returns how many were deleted.
 */
export async function purgeExpiredIdempotencyKeys(prisma: PrismaClient, now = new Date()): Promise<number> {
  const { count } = await prisma.idempotencyKey.deleteMany({ where: { expiresAt: { lt: now } } });
  return count;
}
