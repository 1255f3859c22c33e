import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrisma, GroupCommit, type PrismaClient, type RawDb } from '../src/index.ts';
import { createTestDatabase, createTxidProbe, type TestDatabase } from '../src/testing.ts';

let db: TestDatabase;
let prisma: PrismaClient;
let probe: Awaited<ReturnType<typeof createTxidProbe>>;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 4 });
  probe = await createTxidProbe(prisma);
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

/** Records items as rows, set-wise, returning each item's transaction id; "bad…" items fail. */
const record = (tx: RawDb, items: string[]) => probe.record(tx, items);
const stored = (prefix: string) => probe.stored(prefix);

describe('GroupCommit', () => {
  it('records a lone item at once, and items submitted meanwhile together in the next transaction', async () => {
    const gc = GroupCommit.transaction(prisma, record, { maxBatch: 100, maxInFlight: 1 });
    const items = Array.from({ length: 20 }, (_, i) => `a-${String(i).padStart(2, '0')}`);
    const results = await Promise.all(items.map((i) => gc.submit(i)));
    // Each caller gets its own item's result.
    expect(results.map((r) => r.item)).toEqual(items);
    // The first started alone; the 19 that arrived while it was open shared the next transaction.
    const txids = new Set(results.map((r) => r.txid));
    expect(txids.size).toBe(2);
    expect(results.filter((r) => r.txid === results[0]!.txid)).toHaveLength(1);
    expect(await stored('a-')).toEqual(items);
  });

  it('puts at most maxBatch items in a transaction', async () => {
    const gc = GroupCommit.transaction(prisma, record, { maxBatch: 3, maxInFlight: 1 });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => gc.submit(`b-${i}`)));
    const perTx = new Map<string, number>();
    for (const r of results) perTx.set(r.txid, (perTx.get(r.txid) ?? 0) + 1);
    expect(Math.max(...perTx.values())).toBeLessThanOrEqual(3);
    expect(perTx.size).toBeGreaterThanOrEqual(4);
  });

  it('fails only the bad item of a batch: the others are recorded, each in its own transaction', async () => {
    const gc = GroupCommit.transaction(prisma, record, { maxBatch: 100, maxInFlight: 1 });
    const first = gc.submit('c-0');
    const rest = ['c-1', 'bad-c', 'c-2', 'c-3'].map((i) =>
      gc.submit(i).then(
        (r) => ({ ok: true as const, r }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
    await first;
    const settled = await Promise.all(rest);
    expect(settled.map((s) => s.ok)).toEqual([true, false, true, true]);
    expect(String((settled[1] as { error: Error }).error.message)).toMatch(/^bad item in bad-c$/);
    expect(await stored('c-')).toEqual(['c-0', 'c-1', 'c-2', 'c-3']);
    expect(await stored('bad')).toEqual([]);
  });

  it('statement batches: the first item alone, the ones submitted meanwhile in one statement, its own transaction', async () => {
    let statements = 0;
    // The probe's INSERT alone, outside any interactive transaction: atomic as one statement.
    const gc = GroupCommit.statement(
      prisma,
      (client: PrismaClient, items: string[]) => {
        statements++;
        return probe.record(client, items);
      },
      { maxBatch: 100, maxInFlight: 1 },
    );
    const first = gc.submit('d-0');
    const rest = ['d-1', 'd-2', 'd-3'].map((i) => gc.submit(i));
    const results = await Promise.all([first, ...rest]);
    expect(statements).toBe(2);
    expect(new Set(results.slice(1).map((r) => r.txid)).size).toBe(1);
    expect(results[0].txid).not.toBe(results[1]!.txid);
    expect(await stored('d-')).toEqual(['d-0', 'd-1', 'd-2', 'd-3']);
  });
});
