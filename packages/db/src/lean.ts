/**
 * The hot path's statements straight on node-postgres, on the same connection pool as Prisma's
 * driver adapter. Prisma's `$queryRaw` costs ~190 µs of CPU a statement here against ~50 µs for the
 * same statement on `pg` (and an interactive transaction ~480 µs before its first statement): per
 * stamped payment that was most of the relay's and a large share of the stamper's CPU (measured;
 * ARCHITECTURE.md, "Dependencies beyond the design card"; prisma/orm#23573 reports the same). Statements keep
 * being written once, in this package, as `Prisma.sql` with their zod row schemas (`queryRows`):
 * what changes is only who sends them. Everything else — model queries, migrations, the API's
 * use cases — stays on Prisma.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Prisma, PrismaClient } from './generated/client.ts';
import type { RawDb } from './sql.ts';

/** A raw-statement runner with transactions of its own. */
export interface LeanDb extends RawDb {
  /** `fn`'s statements in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(fn: (tx: RawDb) => Promise<T>): Promise<T>;
}

/**
 * Each statement is prepared once per connection, named by its text: the hot statements are few and
 * their texts fixed (lists travel as array parameters), and planning was a third to a half of their
 * time in Postgres (pg_stat_statements, 2026-12-01).
 */
const names = new Map<string, string>();
function named(query: Prisma.Sql): pg.QueryConfig {
  let name = names.get(query.text);
  // (A text built with a varying shape would name a statement per shape: past a few hundred, stop.)
  if (name === undefined && names.size >= 500) return { text: query.text, values: query.values };
  if (name === undefined) {
    name = `timbra_${createHash('sha1').update(query.text).digest('hex').slice(0, 16)}`;
    names.set(query.text, name);
  }
  return { name, text: query.text, values: query.values };
}

function runner(client: pg.Pool | pg.PoolClient): RawDb {
  return {
    $queryRaw: async <T = unknown>(query: Prisma.Sql) => (await client.query(named(query))).rows as T,
    $executeRaw: async (query: Prisma.Sql) => (await client.query(named(query))).rowCount ?? 0,
  };
}

/** The lean runner over `pool`. */
export function leanDbOver(pool: pg.Pool): LeanDb {
  return {
    ...runner(pool),
    async transaction<T>(fn: (tx: RawDb) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(runner(client));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // A connection that cannot even roll back is not given back to the pool.
        await client.query('ROLLBACK').then(
          () => client.release(),
          (rollbackError: Error) => client.release(rollbackError),
        );
        throw error;
      }
    },
  };
}

const leanByClient = new WeakMap<PrismaClient, LeanDb>();

/** Records the lean runner of a client `createPrisma` built (they share its pool). */
export function registerLeanDb(prisma: PrismaClient, lean: LeanDb): void {
  leanByClient.set(prisma, lean);
}

/**
 * The lean runner sharing `prisma`'s connections; for a client built elsewhere, the same interface
 * on Prisma itself (slower, same results).
 */
export function leanDb(prisma: PrismaClient): LeanDb {
  return (
    leanByClient.get(prisma) ?? {
      $queryRaw: <T = unknown>(query: Prisma.Sql) => prisma.$queryRaw<T>(query),
      $executeRaw: (query: Prisma.Sql) => prisma.$executeRaw(query),
      transaction: <T>(fn: (tx: RawDb) => Promise<T>) => prisma.$transaction((tx) => fn(tx), { timeout: 30_000 }),
    }
  );
}
