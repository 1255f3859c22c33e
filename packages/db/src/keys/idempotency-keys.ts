import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { col, queryRows, type Tx } from '../sql.ts';

// Row schemas, built once: zod compiles a schema on its first parse.
const tryLockIdempotencyKeyRow = z.object({ acquired: col.bool });

/**
 * Forgets Idempotency-Key records past their `expires_at` (the API's IDEMPOTENCY_TTL_HOURS): a request
 * repeated after that is a new request. Run by the worker's retention pass and on demand by `ops keys:purge`.
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

/** A response stored under an Idempotency-Key: what a retry with the same key gets back. */
export interface StoredIdempotentResponse {
  id: string;
  fingerprint: string;
  responseStatus: number;
  responseBody: unknown;
  expiresAt: Date;
}

/** The response stored under (client, key), expired or not; null when none is. */
export function storedIdempotentResponse(
  tx: Tx,
  clientId: string,
  key: string,
): Promise<StoredIdempotentResponse | null> {
  return tx.idempotencyKey.findUnique({ where: { clientId_key: { clientId, key } } });
}

/** Forgets an expired record: the request under its key is a new one. */
export async function forgetIdempotentResponse(tx: Tx, id: string): Promise<void> {
  await tx.idempotencyKey.delete({ where: { id } });
}

/** Stores a request's 2xx response under (client, key) for `ttlHours`. */
export async function storeIdempotentResponse(
  tx: Tx,
  record: { clientId: string; key: string; fingerprint: string; status: number; body: unknown; ttlHours: number },
): Promise<void> {
  await tx.idempotencyKey.create({
    data: {
      clientId: record.clientId,
      key: record.key,
      fingerprint: record.fingerprint,
      responseStatus: record.status,
      responseBody: record.body as Prisma.InputJsonValue,
      expiresAt: new Date(Date.now() + record.ttlHours * 3600_000),
    },
  });
}
