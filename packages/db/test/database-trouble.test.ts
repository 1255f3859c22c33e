/**
 * `databaseTrouble` on the errors a real Postgres gives, through both of our clients (Prisma on the
 * pg adapter, and pg itself as the migrations runner and the lean runner use it): nothing listening,
 * a database that does not exist, a role that does not exist, and a database never migrated. A
 * statement's own error is not the database's state and is left alone. `npm run db:migrate` says the
 * same.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createPrisma, databaseTrouble, isTransactionConflict, retryOnConflict } from '../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

let empty: TestDatabase;
beforeAll(async () => {
  empty = await createTestDatabase({ migrated: false });
});
afterAll(() => empty.drop());

/** A port nothing listens on: one the kernel gave a server that is closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function withUrl(change: (url: URL) => void): string {
  const url = new URL(empty.url);
  change(url);
  return url.toString();
}

/** What each client throws for one query against `url`. */
async function failures(url: string): Promise<{ prismaRaw: unknown; prismaModel: unknown; pg: unknown }> {
  const prisma = createPrisma(url, { poolSize: 1 });
  const caught = async (run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (error) {
      return error;
    }
    throw new Error(`a query against ${url} succeeded`);
  };
  try {
    const client = new pg.Client({ connectionString: url });
    return {
      prismaRaw: await caught(() => prisma.$queryRaw`SELECT count(*) FROM outbox`),
      prismaModel: await caught(() => prisma.outboxRow.findMany({ take: 1 })),
      pg: await caught(async () => {
        try {
          await client.connect();
          await client.query('SELECT count(*) FROM outbox');
        } finally {
          await client.end().catch(() => undefined);
        }
      }),
    };
  } finally {
    await prisma.$disconnect();
  }
}

describe('databaseTrouble: what a failed database call means, in one line', () => {
  it('nothing listening at the address: unreachable, with the host and port', async () => {
    const port = await closedPort();
    const all = await failures(withUrl((u) => (u.port = String(port))));
    for (const error of Object.values(all))
      expect(databaseTrouble(error)).toEqual({
        kind: 'unreachable',
        message: `cannot reach Postgres at 127.0.0.1:${port}: is it running, and is DATABASE_URL right?`,
      });
  });

  it('a database that does not exist: named, with the command that creates it', async () => {
    const name = `timbra_absent_${randomBytes(4).toString('hex')}`;
    const all = await failures(withUrl((u) => (u.pathname = `/${name}`)));
    for (const error of Object.values(all))
      expect(databaseTrouble(error)).toEqual({
        kind: 'missing',
        message: `the database "${name}" does not exist: create and migrate it with \`npm run db:migrate -- --create-db\``,
      });
  });

  it('a role that does not exist: the login refused, and which setting to check', async () => {
    const role = `nobody_${randomBytes(4).toString('hex')}`;
    const all = await failures(withUrl((u) => (u.username = role)));
    for (const error of Object.values(all)) {
      const trouble = databaseTrouble(error, "the worker's DATABASE_URL");
      expect(trouble?.kind).toBe('login_refused');
      expect(trouble?.message).toBe(
        `Postgres refused the login (role "${role}" does not exist): check the user and password in the worker's DATABASE_URL`,
      );
    }
  });

  it('a database never migrated: the command that migrates it', async () => {
    const all = await failures(empty.url);
    for (const error of Object.values(all)) {
      const trouble = databaseTrouble(error);
      expect(trouble?.kind).toBe('not_migrated');
      expect(trouble?.message).toMatch(
        /^the database is not migrated \(relation "(public\.)?outbox" does not exist\): run `npm run db:migrate`$/,
      );
    }
  });

  it("a statement's own error, or anything else, is not the database's state", async () => {
    const prisma = createPrisma(empty.url, { poolSize: 1 });
    try {
      const error = await prisma.$queryRaw`SELECT 1 / 0`.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeDefined();
      expect(databaseTrouble(error)).toBeUndefined();
    } finally {
      await prisma.$disconnect();
    }
    for (const other of [undefined, null, 'ECONNREFUSED', new Error('boom'), { code: 'P2002' }])
      expect(databaseTrouble(other)).toBeUndefined();
  });

  it("the server's connections all taken (53300): busy", async () => {
    // A role allowed no connection: Postgres answers as it does when max_connections is reached.
    const role = `timbra_full_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: empty.url });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
      const all = await failures(withUrl((u) => (u.username = role)));
      for (const error of Object.values(all)) expect(databaseTrouble(error)?.kind).toBe('busy');
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('never repeats the password of the connection string', async () => {
    const port = await closedPort();
    const all = await failures(
      withUrl((u) => {
        u.port = String(port);
        u.password = 'hunter2-secret';
      }),
    );
    for (const error of Object.values(all)) expect(JSON.stringify(databaseTrouble(error))).not.toContain('hunter2');
  });
});

describe('npm run db:migrate on a database it cannot use', () => {
  const cli = fileURLToPath(new URL('../src/cli/migrate-cli.ts', import.meta.url));
  const run = (url: string) =>
    new Promise<{ status: number; stderr: string }>((done) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', '--conditions=@timbra/source', cli],
        { env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: url }, encoding: 'utf8' },
        (error, _stdout, stderr) => done({ status: error ? Number(error.code ?? -1) : 0, stderr }),
      ),
    );

  it('says what to fix: --create-db for a missing database, the address for one not running', async () => {
    const name = `timbra_absent_${randomBytes(4).toString('hex')}`;
    const port = await closedPort();
    const [missing, down] = await Promise.all([
      run(withUrl((u) => (u.pathname = `/${name}`))),
      run(withUrl((u) => (u.port = String(port)))),
    ]);
    expect(missing).toEqual({
      status: 1,
      stderr: `migration failed: the database "${name}" does not exist: create and migrate it with \`npm run db:migrate -- --create-db\`\n`,
    });
    expect(down).toEqual({
      status: 1,
      stderr: `migration failed: cannot reach Postgres at 127.0.0.1:${port}: is it running, and is DATABASE_URL right?\n`,
    });
  });
});

describe('a transaction that lost a race', () => {
  it('a real deadlock is a conflict, and retryOnConflict runs the loser again until it commits', async () => {
    const table = `race_${randomBytes(4).toString('hex')}`;
    const setup = new pg.Client({ connectionString: empty.url });
    await setup.connect();
    await setup.query(`CREATE TABLE ${table} (id int PRIMARY KEY, n int NOT NULL)`);
    await setup.query(`INSERT INTO ${table} VALUES (1, 0), (2, 0)`);
    const clients = [new pg.Client({ connectionString: empty.url }), new pg.Client({ connectionString: empty.url })];
    await Promise.all(clients.map((c) => c.connect()));
    // Both hold their first row before either asks for its second: one of them must lose.
    let held = 0;
    let bothHold: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (bothHold = resolve));
    const errors: unknown[] = [];
    const move = (client: pg.Client, first: number, second: number) =>
      retryOnConflict(async () => {
        await client.query('BEGIN');
        try {
          await client.query(`UPDATE ${table} SET n = n + 1 WHERE id = $1`, [first]);
          if (++held === 2) bothHold();
          await together;
          await client.query(`UPDATE ${table} SET n = n + 1 WHERE id = $1`, [second]);
          await client.query('COMMIT');
        } catch (error) {
          errors.push(error);
          await client.query('ROLLBACK');
          throw error;
        }
      });
    try {
      await Promise.all([move(clients[0]!, 1, 2), move(clients[1]!, 2, 1)]);
      expect(errors.length).toBeGreaterThanOrEqual(1);
      expect(errors.every(isTransactionConflict)).toBe(true);
      const { rows } = await setup.query<{ n: number }>(`SELECT n FROM ${table} ORDER BY id`);
      expect(rows.map((r) => r.n)).toEqual([2, 2]);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
      await setup.end();
    }
  });

  it('any other failure is not retried', async () => {
    let calls = 0;
    const failing = retryOnConflict(() => {
      calls++;
      return Promise.reject(Object.assign(new Error('duplicate key'), { code: '23505' }));
    });
    await expect(failing).rejects.toThrow('duplicate key');
    expect(calls).toBe(1);
  });
});
