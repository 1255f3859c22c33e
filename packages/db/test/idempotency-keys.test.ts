/** @clock an Idempotency-Key's TTL (the application's clock) against what the database stored */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { PrismaClient } from '../src/index.ts';
import { purgeExpiredIdempotencyKeys } from '../src/keys/index.ts';
import { databaseWithEmisor } from '../src/testing.ts';

let db: Awaited<ReturnType<typeof databaseWithEmisor>>;
let prisma: PrismaClient;
beforeAll(async () => {
  db = await databaseWithEmisor();
  prisma = db.prisma;
});
afterAll(async () => {
  await db.close();
});

describe('purgeExpiredIdempotencyKeys', () => {
  it('deletes the records past their expiry and keeps the live ones', async () => {
    const client = await prisma.apiClient.create({ data: { name: 'pos', keyHash: 'k'.repeat(64) } });
    const hour = 3_600_000;
    const record = (key: string, expiresAt: Date) => ({
      clientId: client.id,
      key,
      fingerprint: 'f'.repeat(64),
      responseStatus: 201,
      responseBody: { ok: true },
      expiresAt,
    });
    await prisma.idempotencyKey.createMany({
      data: [
        record('expired-1', new Date(Date.now() - hour)),
        record('expired-2', new Date(Date.now() - 1_000)),
        record('live', new Date(Date.now() + hour)),
      ],
    });
    expect(await purgeExpiredIdempotencyKeys(prisma)).toBe(2);
    expect((await prisma.idempotencyKey.findMany()).map((k) => k.key)).toEqual(['live']);
    expect(await purgeExpiredIdempotencyKeys(prisma)).toBe(0);
  });
});
