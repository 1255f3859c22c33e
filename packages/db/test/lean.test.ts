/** @clock claims compare available_at with the database's now() */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { z } from 'zod';
import {
  createPrisma,
  databaseTrouble,
  heardForLife,
  leanDb,
  NoConnectionFree,
  plannedOnce,
  Prisma,
  PrismaClient,
} from '../src/index.ts';
import { leanDbOver } from '../src/lean.ts';
import { col, execute, queryRows } from '../src/sql.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

// The hot path's runner on node-postgres: the same statements, the same parsed rows as through
// Prisma, and transactions that commit or roll back whole.

let db: TestDatabase;
let prisma: PrismaClient;
beforeAll(async () => {
  db = await createTestDatabase();
  prisma = createPrisma(db.url, { poolSize: 3 });
  await prisma.$executeRawUnsafe('CREATE TABLE lean_probe (k text PRIMARY KEY, n int NOT NULL)');
});
afterAll(async () => {
  await prisma.$disconnect();
  await db.drop();
});

const row = z.object({
  id: col.uuid,
  n: col.int,
  total: col.bigint,
  flag: col.bool,
  at: z.date(),
  doc: z.array(z.object({ a: col.int })),
  ids: z.array(col.uuid),
});
const statement = (ids: string[]) => Prisma.sql`
  SELECT ${ids[0]}::uuid AS id, 41 + ${1}::int AS n, count(*) AS total, ${true}::boolean AS flag, now() AS at,
         json_build_array(json_build_object('a', 1)) AS doc, ${ids}::uuid[] AS ids
  FROM generate_series(1, 3)`;

describe('the lean runner', () => {
  it('sends a statement with its parameters and gives back the rows Prisma gives back', async () => {
    const ids = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
    const [lean] = await queryRows(leanDb(prisma), row, statement(ids));
    const [viaPrisma] = await queryRows(prisma, row, statement(ids));
    expect(lean).toMatchObject({ id: ids[0], n: 42, total: 3, flag: true, doc: [{ a: 1 }], ids });
    expect({ ...lean, at: 0 }).toEqual({ ...viaPrisma, at: 0 });
    expect(lean!.at).toBeInstanceOf(Date);
  });

  it('commits a transaction whole, and rolls it back whole when it throws', async () => {
    const lean = leanDb(prisma);
    await lean.transaction(async (tx) => {
      await tx.$executeRaw(Prisma.sql`INSERT INTO lean_probe VALUES ('a', 1)`);
      await tx.$executeRaw(Prisma.sql`INSERT INTO lean_probe VALUES ('b', 2)`);
    });
    await expect(
      lean.transaction(async (tx) => {
        await tx.$executeRaw(Prisma.sql`INSERT INTO lean_probe VALUES ('c', 3)`);
        await tx.$executeRaw(Prisma.sql`INSERT INTO lean_probe VALUES ('a', 4)`); // duplicate key
      }),
    ).rejects.toThrow(/duplicate key/);
    const keys = await prisma.$queryRaw<{ k: string }[]>`SELECT k FROM lean_probe ORDER BY k`;
    expect(keys.map((r) => r.k)).toEqual(['a', 'b']);
    // The connection went back to the pool clean: the next transaction works.
    expect(await lean.transaction((tx) => execute(tx, Prisma.sql`UPDATE lean_probe SET n = n + 1`))).toBe(2);
  });

  it('a client built elsewhere gets the same interface on Prisma itself', async () => {
    const other = new PrismaClient({ adapter: new PrismaPg({ connectionString: db.url, max: 1 }) });
    try {
      const lean = leanDb(other);
      const [viaOther] = await queryRows(lean, row, statement(['00000000-0000-4000-8000-00000000000c']));
      expect(viaOther).toMatchObject({ n: 42, total: 3 });
      await lean.transaction((tx) => execute(tx, Prisma.sql`INSERT INTO lean_probe VALUES ('z', 0)`));
      expect(await prisma.$queryRaw<{ n: number }[]>`SELECT n FROM lean_probe WHERE k = 'z'`).toEqual([{ n: 0 }]);
    } finally {
      await other.$disconnect();
    }
  });

  it("bounds a transaction's statements: one waiting on a lock held elsewhere fails, and the rest commit", async () => {
    const pool = heardForLife(new pg.Pool({ connectionString: db.url, max: 2 }));
    const lean = leanDbOver(pool, { maxWaitMs: 5_000, statementTimeoutMs: 300 });
    await prisma.$executeRawUnsafe(`INSERT INTO lean_probe VALUES ('locked', 0) ON CONFLICT DO NOTHING`);
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT * FROM lean_probe WHERE k = 'locked' FOR UPDATE`);
      await expect(
        lean.transaction((tx) => execute(tx, Prisma.sql`UPDATE lean_probe SET n = 1 WHERE k = 'locked'`)),
      ).rejects.toThrow(/statement timeout/);
      await holder.query('ROLLBACK');
      // The bound is the transaction's own (SET LOCAL): the connection back in the pool has none.
      const shown = (await pool.query('SHOW statement_timeout')).rows as { statement_timeout: string }[];
      expect(shown).toEqual([{ statement_timeout: '0' }]);
      expect(
        await lean.transaction((tx) => execute(tx, Prisma.sql`UPDATE lean_probe SET n = 1 WHERE k = 'locked'`)),
      ).toBe(1);
    } finally {
      holder.release();
      await pool.end();
    }
  });

  it('bounds the wait for a connection, and a connection that comes late goes back to the pool', async () => {
    const pool = heardForLife(new pg.Pool({ connectionString: db.url, max: 1 }));
    const lean = leanDbOver(pool, { maxWaitMs: 200, statementTimeoutMs: 5_000 });
    const busy = await pool.connect();
    try {
      const error = await lean
        .transaction((tx) => execute(tx, Prisma.sql`SELECT 1`))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(NoConnectionFree);
      // What the API answers 503 database_unavailable for.
      expect(databaseTrouble(error)).toEqual({
        kind: 'busy',
        message:
          'every database connection is in use (no database connection free within 200 ms): the database is overloaded, or a transaction holds its connection',
      });
    } finally {
      busy.release();
    }
    // The connection the given-up wait got late was released: the pool (of one) serves the next one
    // (kept, it would time out too).
    expect(await lean.transaction(async (tx) => tx.$queryRaw<{ one: number }[]>(Prisma.sql`SELECT 1 AS one`))).toEqual([
      { one: 1 },
    ]);
    expect(pool.waitingCount).toBe(0);
    await pool.end();
  });

  it('a connection that breaks mid-transaction (Postgres restarted) fails that transaction, not the process', async () => {
    const pool = heardForLife(new pg.Pool({ connectionString: db.url, max: 1 }));
    const lean = leanDbOver(pool, { maxWaitMs: 2_000, statementTimeoutMs: 5_000 });
    const uncaught: unknown[] = [];
    const hear = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', hear);
    try {
      const outcome = lean.transaction(async (tx) => {
        const [first] = await tx.$queryRaw<{ pid: number }[]>(Prisma.sql`SELECT pg_backend_pid() AS pid`);
        // Between two statements, as a batch does its own work: the backend goes away (what every
        // backend gets when the postmaster dies — here one, by another session).
        await prisma.$queryRaw(Prisma.sql`SELECT pg_terminate_backend(${first!.pid}::int)`);
        await new Promise((resolve) => setTimeout(resolve, 300));
        return tx.$queryRaw(Prisma.sql`SELECT 1`);
      });
      await expect(outcome).rejects.toThrow();
      expect(uncaught).toEqual([]);
      // The broken connection was not given back: the pool (of one) serves the next transaction.
      expect(
        await lean.transaction(async (tx) => tx.$queryRaw<{ one: number }[]>(Prisma.sql`SELECT 1 AS one`)),
      ).toEqual([{ one: 1 }]);
    } finally {
      process.removeListener('uncaughtException', hear);
      await pool.end();
    }
  });

  it('a pool heardForLife survives a connection that breaks while checked out with nobody listening', async () => {
    // Any holder, not only the lean transaction: here one that listens for nothing.
    const pool = heardForLife(new pg.Pool({ connectionString: db.url, max: 1 }));
    const uncaught: unknown[] = [];
    const hear = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', hear);
    try {
      const held = await pool.connect();
      const { rows } = await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const ended = new Promise((resolve, reject) => {
        held.once('end', resolve);
        setTimeout(() => reject(new Error('the connection did not end within 5 s')), 5_000).unref();
      });
      await prisma.$queryRaw(Prisma.sql`SELECT pg_terminate_backend(${rows[0]!.pid}::int)`);
      await ended;
      expect(uncaught).toEqual([]);
      // The holder hears of it at its next statement, and the pool drops the connection.
      await expect(held.query('SELECT 1')).rejects.toThrow(/not queryable|terminat/i);
      held.release();
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(pool.totalCount).toBe(1);
    } finally {
      process.removeListener('uncaughtException', hear);
      await pool.end();
    }
  });

  it('a pool heardForLife survives a connection that breaks in the same read that hands it out, before its holder can listen', async () => {
    // What a Postgres crash does to a connection being handed out: its ReadyForQuery and the FATAL
    // arrive in one read; the pool gives the connection out on the first (the holder's promise
    // resolves later) and the second is emitted before the holder can have attached a listener.
    // A server that answers exactly that, byte for byte.
    const message = (type: string, body: Buffer) => {
      const length = Buffer.alloc(4);
      length.writeInt32BE(body.length + 4);
      return Buffer.concat([Buffer.from(type), length, body]);
    };
    const fatal = Buffer.concat([
      ...[
        ['S', 'FATAL'],
        ['V', 'FATAL'],
        ['C', '57P01'],
        ['M', 'terminating connection due to unexpected postmaster exit'],
      ].map(([field, value]) => Buffer.from(`${field}${value}\0`)),
      Buffer.from('\0'),
    ]);
    const server = net.createServer((socket) =>
      socket.once('data', () =>
        socket.end(
          Buffer.concat([
            message('R', Buffer.from([0, 0, 0, 0])), // AuthenticationOk
            message('Z', Buffer.from('I')), // ReadyForQuery
            message('E', fatal),
          ]),
        ),
      ),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const pool = heardForLife(new pg.Pool({ host: '127.0.0.1', port, user: 'timbra', database: 'timbra', max: 1 }));
    try {
      const held = await pool.connect();
      await expect(held.query('SELECT 1')).rejects.toThrow(/not queryable|terminat/i);
      held.release();
    } finally {
      await pool.end();
      server.close();
    }
  });

  it('$disconnect ends the connections of a client used only through the lean runner', async () => {
    const client = createPrisma(db.url, { poolSize: 2 });
    const lean = leanDb(client);
    const pids = z.object({ pid: col.int });
    const [plain] = await queryRows(lean, pids, Prisma.sql`SELECT pg_backend_pid() AS pid`);
    const [planned] = await queryRows(lean, pids, plannedOnce(Prisma.sql`SELECT pg_backend_pid() AS pid`));
    await client.$disconnect();
    const open = async () =>
      Number(
        (
          await prisma.$queryRaw<{ n: bigint }[]>`
            SELECT count(*) AS n FROM pg_stat_activity WHERE pid IN (${plain!.pid}, ${planned!.pid})`
        )[0]!.n,
      );
    for (let i = 0; i < 40 && (await open()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await open()).toBe(0);
  });

  it('runs a statement marked plannedOnce on sessions that plan it once; any other, and any in a transaction, as usual', async () => {
    const client = createPrisma(db.url, { poolSize: 2 });
    const mode = Prisma.sql`SELECT current_setting('plan_cache_mode') AS mode, pg_backend_pid() AS pid`;
    const modeRow = z.object({ mode: z.string(), pid: col.int });
    let marked: z.infer<typeof modeRow> | undefined;
    try {
      const lean = leanDb(client);
      [marked] = await queryRows(lean, modeRow, plannedOnce(Prisma.sql`${mode}`));
      const [unmarked] = await queryRows(lean, modeRow, Prisma.sql`${mode}`);
      const [inTransaction] = await lean.transaction((tx) => queryRows(tx, modeRow, plannedOnce(Prisma.sql`${mode}`)));
      expect([marked!.mode, unmarked!.mode, inTransaction!.mode]).toEqual(['force_generic_plan', 'auto', 'auto']);
      expect(marked!.pid).not.toBe(unmarked!.pid);
      // The same marked statement twice: one generic plan, made once (the second execution reuses it).
      const probe = plannedOnce(Prisma.sql`SELECT n FROM lean_probe WHERE k = ${'a'}`);
      await lean.$queryRaw(probe);
      await lean.$queryRaw(plannedOnce(Prisma.sql`SELECT n FROM lean_probe WHERE k = ${'b'}`));
      const plans = await queryRows(
        lean,
        z.object({ generic_plans: col.bigint, custom_plans: col.bigint }),
        plannedOnce(
          Prisma.sql`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM lean_probe WHERE k = $1%'`,
        ),
      );
      expect(plans.length).toBeGreaterThan(0);
      for (const p of plans) expect(p.custom_plans).toBe(0);
    } finally {
      await client.$disconnect();
    }
    // $disconnect ended those sessions too: the one that ran the marked statement is gone.
    const gone = async () =>
      (
        await prisma.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${marked!.pid}`
      )[0]!.n === 0n;
    for (let i = 0; i < 40 && !(await gone()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(await gone()).toBe(true);
  });

  it('plans a transaction’s statements once when asked (planOnce), that transaction only', async () => {
    const lean = leanDbOver(heardForLife(new pg.Pool({ connectionString: db.url, max: 1 })));
    const mode = Prisma.sql`SELECT current_setting('plan_cache_mode') AS mode`;
    const modeRow = z.object({ mode: z.string() });
    const probe = (k: string) => Prisma.sql`SELECT n FROM lean_probe WHERE k = ${k}`;
    const inside = await lean.transaction(
      async (tx) => {
        for (const k of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await tx.$queryRaw(probe(k));
        return (await queryRows(tx, modeRow, mode))[0]!.mode;
      },
      { planOnce: true },
    );
    // The same connection (a pool of one) after it: back to Postgres's own choice.
    const after = (await lean.transaction((tx) => queryRows(tx, modeRow, mode)))[0]!.mode;
    expect([inside, after]).toEqual(['force_generic_plan', 'auto']);
    const [plans] = await queryRows(
      lean,
      z.object({ generic_plans: col.bigint, custom_plans: col.bigint }),
      Prisma.sql`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%FROM lean_probe WHERE k = $1%'`,
    );
    // Seven executions, one plan: the generic one, made once (without planOnce, the first five are custom).
    expect(plans).toEqual({ generic_plans: 1, custom_plans: 0 });
  });
});
