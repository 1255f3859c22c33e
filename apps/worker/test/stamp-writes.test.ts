import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrisma, type PrismaClient } from '@timbra/db';
import { createTestDatabase, type TestDatabase } from '@timbra/db/testing';
import { stampWrites } from '../src/stamping/stamp-writes.ts';
import { pendingInvoice } from './helpers.ts';

// The stamper's group commit: statements submitted while others of their kind run go together in
// the next one. Submitted here in one tick, as twelve jobs whose PAC answers land together.

let db: TestDatabase;
let prisma: PrismaClient;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 4 });
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

/** How many transactions wrote these invoices' current rows (rows one transaction wrote share its xmin). */
async function transactionsOf(ids: string[]) {
  const [row] = await prisma.$queryRaw<{ n: number }[]>`
    SELECT count(DISTINCT xmin::text)::int AS n FROM invoices WHERE id = ANY(${ids}::uuid[])`;
  return row!.n;
}

describe('stampWrites', () => {
  it('twelve stamps at once: two statements start alone (two at a time), the ten that wait share the next', async () => {
    const rows = [];
    for (let i = 0; i < 12; i++) rows.push(await pendingInvoice(prisma, `writes-${i}`));
    const writes = stampWrites(prisma, { maxBatch: 64, maxInFlight: 2 });
    const loaded = await Promise.all(rows.map((r) => writes.load(r.outboxId)));
    expect(loaded.map((l) => l?.invoiceId)).toEqual(rows.map((r) => r.invoiceId));
    const allowed = await Promise.all(
      rows.map((r) => writes.recordInFlight({ ...r, version: 1, pac: 'primary', id: crypto.randomUUID() })),
    );
    expect(allowed).toEqual(rows.map(() => true));
    const persisted = await Promise.all(
      rows.map((r, i) => {
        const uuid = `0000000${i.toString(16)}-AAAA-4BBB-8CCC-DDDDDDDDDDDD`.slice(-36);
        return writes.persist({
          row: { outboxId: r.outboxId, invoiceId: r.invoiceId, version: 1 },
          stamp: { uuid, tfdXml: '<tfd/>', pac: 'primary' },
          calls: [{ pac: 'primary', outcome: 'stamped', uuid, durationMs: 1 }],
        });
      }),
    );
    expect(persisted.every((p) => p.written)).toBe(true);
    expect(await transactionsOf(rows.map((r) => r.invoiceId))).toBe(3);
    expect(await prisma.outboxRow.count({ where: { id: { in: rows.map((r) => r.outboxId) }, status: 'done' } })).toBe(
      12,
    );
  });

  it('a batch that fails is retried stamp by stamp: one bad stamp fails alone', async () => {
    const rows = [];
    for (let i = 0; i < 4; i++) rows.push(await pendingInvoice(prisma, `bad-${i}`));
    const writes = stampWrites(prisma, { maxBatch: 64, maxInFlight: 1 });
    const results = await Promise.allSettled(
      rows.map((r, i) =>
        writes.persist({
          row: { outboxId: r.outboxId, invoiceId: r.invoiceId, version: 1 },
          // The third claims the first's UUID (unique): its statement fails. The first went alone;
          // the other three shared a batch, which is then retried stamp by stamp.
          stamp: {
            uuid: `BAD${i === 2 ? 0 : i}-AAAA-4BBB-8CCC-DDDDDDDDDDDD`,
            tfdXml: '<tfd/>',
            pac: 'primary',
          },
          calls: [],
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const stamped = await prisma.invoice.findMany({
      where: { id: { in: rows.map((r) => r.invoiceId) } },
      select: { id: true, status: true },
    });
    expect(stamped.filter((s) => s.status === 'stamped')).toHaveLength(3);
  });
});
