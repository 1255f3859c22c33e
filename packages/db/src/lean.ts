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
import pg from 'pg';
import type { Prisma, PrismaClient } from './generated/client.ts';
import { NoConnectionFree } from './database-trouble.ts';
import type { RawDb } from './sql.ts';

/** A raw-statement runner with transactions of its own. */
export interface LeanDb extends RawDb {
  /** `fn`'s statements in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  transaction<T>(fn: (tx: RawDb) => Promise<T>, options?: LeanTransactionOptions): Promise<T>;
}

export interface LeanTransactionOptions {
  /**
   * Each statement planned once per connection (`plan_cache_mode = force_generic_plan` for this
   * transaction, set in its first message), as `plannedOnce` does outside transactions: for a
   * statement Postgres would plan afresh at each execution though its generic plan does.
   */
  planOnce?: boolean;
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

const plannedOnceStatements = new WeakSet<Prisma.Sql>();

/**
 * Marks a statement to be planned once per connection (a generic plan) instead of at each execution.
 * Prepared statements are still planned afresh each time while Postgres judges their generic plan's
 * estimate worse than the custom plans' (`plan_cache_mode = auto`): for the stamp's statement that
 * judgement costs more than it saves — 1.9–2.6 → 1.1 ms of backend CPU a stamp in batches of one,
 * 0.9 → 0.65 ms in batches of four (measured 2026-12-02; the runs are in the history of
 * docs/performance.md). Such a statement runs, outside
 * a transaction, on the lean runner's own sessions with `plan_cache_mode = force_generic_plan`; in
 * a transaction or on Prisma it is planned as usual. Only for statements whose plans need no
 * parameter's value: never one whose partial index a parameter decides.
 */
export function plannedOnce(query: Prisma.Sql): Prisma.Sql {
  plannedOnceStatements.add(query);
  return query;
}

function runner(client: pg.Pool | pg.PoolClient, plannedOnceSessions?: pg.Pool): RawDb {
  const to = (query: Prisma.Sql) =>
    plannedOnceSessions && plannedOnceStatements.has(query) ? plannedOnceSessions : client;
  return {
    $queryRaw: async <T = unknown>(query: Prisma.Sql) => (await to(query).query(named(query))).rows as T,
    $executeRaw: async (query: Prisma.Sql) => (await to(query).query(named(query))).rowCount ?? 0,
  };
}

/**
 * `pool`, with every connection it opens heard for the whole of its life. When Postgres crashes,
 * every backend waiting on its client sends "terminating connection due to unexpected postmaster
 * exit"; on a connection nobody listens to, that `error` is an uncaught exception and the process
 * exits. pg's pool listens only while a connection is idle in it, and a holder only from when it has
 * the connection — too late when the FATAL comes in the same read as the ReadyForQuery that handed
 * the connection to a waiting holder (the pool gives it out on the first message, the holder's
 * promise resolves after the second): stamping workers under load exited so on the chaos run's
 * Postgres crash, as the API did between a lean transaction's statements (node-postgres#2439).
 * Heard here, the error only marks the connection broken: its holder's next statement fails (a
 * rejection the holder handles) and the pool drops it when it is given back.
 */
export function heardForLife(pool: pg.Pool): pg.Pool {
  // An idle connection that breaks is dropped by the pool, which then emits it here.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}

/**
 * A pool of sessions for the statements `plannedOnce` marks (at most two connections), with
 * `options` added to their own settings (a role, an organization): the one place their settings are
 * made.
 */
export function plannedOnceSessions(connectionString: string, options = ''): pg.Pool {
  return heardForLife(
    new pg.Pool({
      connectionString,
      max: 2,
      options: `-c plan_cache_mode=force_generic_plan ${options}`.trim(),
    }),
  );
}

/**
 * The sessions for statements `plannedOnce` marks beside `pool`, opened when first used (only a
 * stamping worker does) and ended with it. `options`: the pool's own session settings (its
 * organization), which they share.
 */
export function plannedOnceSessionsBeside(pool: pg.Pool, connectionString: string, options = ''): pg.Pool {
  const sessions = plannedOnceSessions(connectionString, options);
  const endPool = pool.end.bind(pool);
  pool.end = async () => {
    await Promise.all([endPool(), sessions.end()]);
  };
  return sessions;
}

/**
 * A lean transaction's bounds, as Prisma's interactive transactions had them on this path: a
 * connection is waited for at most `maxWaitMs` (then the caller gets an error rather than hanging
 * behind a pool that never frees), and each statement in it runs at most `statementTimeoutMs` (a
 * lock held by a stuck transaction fails this one instead of holding its connection for ever).
 */
export const LEAN_TRANSACTION_LIMITS: LeanTransactionLimits = { maxWaitMs: 10_000, statementTimeoutMs: 20_000 };

export interface LeanTransactionLimits {
  maxWaitMs: number;
  statementTimeoutMs: number;
}

/**
 * A pool whose connection may lack a setting its holder needs (organizations/clients.ts: the
 * organization, when the connection last worked for another), which a transaction sets in its first
 * message rather than in a round trip of its own.
 */
export interface SetInBegin {
  /** A connection, and the statement that readies it for this holder's transaction ('' when none is needed). */
  connectForTransaction(): Promise<{ client: pg.PoolClient; setLocal: string }>;
}

function setsInBegin(pool: pg.Pool): pool is pg.Pool & SetInBegin {
  return typeof (pool as Partial<SetInBegin>).connectForTransaction === 'function';
}

async function connect(pool: pg.Pool, maxWaitMs: number): Promise<{ client: pg.PoolClient; setLocal: string }> {
  let timer: NodeJS.Timeout | undefined;
  const acquiring = setsInBegin(pool)
    ? pool.connectForTransaction()
    : pool.connect().then((client) => ({ client, setLocal: '' }));
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoConnectionFree(maxWaitMs)), maxWaitMs);
  });
  try {
    return await Promise.race([acquiring, timeout]);
  } catch (error) {
    // Gave up waiting: the connection, when it comes, goes straight back.
    acquiring.then(
      ({ client }) => client.release(),
      () => undefined,
    );
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The lean runner over `pool`, which must be `heardForLife` (`createPrisma`'s is): a transaction
 * holds a connection between its statements, and one that breaks there must fail the transaction,
 * not end the process.
 */
export function leanDbOver(
  pool: pg.Pool,
  limits: LeanTransactionLimits = LEAN_TRANSACTION_LIMITS,
  plannedOnceSessions?: pg.Pool,
): LeanDb {
  // One simple-protocol message: the statement bound costs no round trip of its own.
  const begin = `BEGIN; SET LOCAL statement_timeout = ${Math.trunc(limits.statementTimeoutMs)}`;
  return {
    ...runner(pool, plannedOnceSessions),
    async transaction<T>(fn: (tx: RawDb) => Promise<T>, options: LeanTransactionOptions = {}): Promise<T> {
      const { client, setLocal } = await connect(pool, limits.maxWaitMs);
      try {
        const planOnce = options.planOnce ? 'SET LOCAL plan_cache_mode = force_generic_plan' : '';
        await client.query([begin, planOnce, setLocal].filter((s) => s !== '').join('; '));
        const result = await fn(runner(client));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // A connection that cannot even roll back (broken: Postgres restarted) is not given back
        // to the pool.
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
      transaction: <T>(fn: (tx: RawDb) => Promise<T>) =>
        prisma.$transaction((tx) => fn(tx), {
          maxWait: LEAN_TRANSACTION_LIMITS.maxWaitMs,
          timeout: LEAN_TRANSACTION_LIMITS.statementTimeoutMs,
        }),
    }
  );
}
