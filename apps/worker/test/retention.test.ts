/** @clock retention ages are measured on the database's clock */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { DEFAULT_RETENTION, type RetentionTable } from '@timbra/db/retention';
import { createTestDatabase, databaseNow, type TestDatabase } from '@timbra/db/testing';
import { runRetention } from '../src/operations/retention.ts';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import { eventually, testEmisor } from './helpers.ts';

// The sweeper role's retention timer as the worker runs it: a pass soon after start, what it deleted
// logged as history_pruned and counted in the metrics.

let db: TestDatabase;
let prisma: PrismaClient;
let organizationId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 2 });
  organizationId = (await testEmisor(prisma)).id;
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

describe('runRetention', () => {
  it('prunes soon after start, logs history_pruned and feeds the metrics', async () => {
    const now = await databaseNow(prisma);
    const event = (eventId: string, days: number) => ({
      provider: 'mercadopago',
      eventId,
      type: 'payment',
      result: 'accepted',
      payload: {},
      receivedAt: new Date(now - days * 86_400_000),
    });
    await prisma.webhookEvent.createMany({ data: [event('old-1', 45), event('old-2', 31), event('recent', 1)] });
    // Idempotency-Key records past their TTL go in the same pass (the API runs no timer for them).
    const client = await prisma.apiClient.create({ data: { name: 'retention', keyHash: 'h'.repeat(64) } });
    const key = (key: string, expiresAt: Date) => ({
      clientId: client.id,
      key,
      fingerprint: 'x',
      responseStatus: 201,
      responseBody: {},
      expiresAt,
    });
    await prisma.idempotencyKey.createMany({
      data: [key('expired', new Date(Date.now() - 60_000)), key('live', new Date(Date.now() + 3_600_000))],
    });

    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const metrics = createWorkerMetrics({
      prisma,
      chain: { breakers: new Map() } as unknown as Parameters<typeof createWorkerMetrics>[0]['chain'],
    });
    const passes: Record<RetentionTable, number>[] = [];
    const timer = runRetention(
      {
        // One organization (apps/worker/test/organizations.test.ts: the pass over several).
        each: async (_what, duty) => ({ results: [await duty({ organizationId, prisma, csd: undefined })], failed: 0 }),
        policy: DEFAULT_RETENTION,
        batchSize: 1,
        logger,
        onPass: (deleted) => {
          metrics.recordPrune(deleted);
          passes.push(deleted);
        },
      },
      { intervalMs: 60_000, firstAfterMs: 10 },
    );
    try {
      await eventually(() => Promise.resolve(passes.length > 0));
    } finally {
      timer.stop();
    }
    expect(passes[0]).toEqual({ outbox: 0, pac_attempts: 0, webhook_events: 2 });
    expect((await prisma.webhookEvent.findMany()).map((e) => e.eventId)).toEqual(['recent']);
    expect((await prisma.idempotencyKey.findMany()).map((k) => k.key)).toEqual(['live']);
    const logged = lines.map(
      (l) => JSON.parse(l) as { msg: string; deleted?: unknown; expiredIdempotencyKeys?: number },
    );
    expect(logged.find((l) => l.msg === 'history_pruned')).toMatchObject({
      deleted: passes[0],
      expiredIdempotencyKeys: 1,
    });
    const exposition = await metrics.registry.metrics();
    expect(exposition).toMatch(/timbra_history_pruned_total\{table="webhook_events"\} 2/);
    expect(exposition).toMatch(/timbra_history_prune_last_success_timestamp_seconds [1-9]\d{9}/);
  });
});
