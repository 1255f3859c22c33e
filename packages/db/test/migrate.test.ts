import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, migrationStatus, MIGRATIONS_DIR, readMigrations, unmetRequirements } from '../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrated: false });
});
afterAll(() => db.drop());

async function query<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('migrations runner', () => {
  it('applies every migration on a fresh database, concurrently with another runner, once', async () => {
    const [a, b] = await Promise.all([migrate(db.url, MIGRATIONS_DIR), migrate(db.url, MIGRATIONS_DIR)]);
    const all = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(all.length).toBeGreaterThanOrEqual(3);
    // Each applied by exactly one of the two runners, in order.
    expect([...a, ...b].sort()).toEqual(all);
    const rows = await query<{ migration_name: string; applied_steps_count: number }>(
      'SELECT migration_name, applied_steps_count FROM "_prisma_migrations" WHERE finished_at IS NOT NULL',
    );
    expect(rows.sort((x, y) => x.migration_name.localeCompare(y.migration_name))).toEqual(
      all.map((migration_name) => ({ migration_name, applied_steps_count: 1 })),
    );
    expect(await migrationStatus(db.url, MIGRATIONS_DIR)).toEqual({
      applied: all,
      pending: [],
      modified: [],
    });
    expect(await migrate(db.url, MIGRATIONS_DIR)).toEqual([]);
  });

  it('reports a pending migration, refuses a modified one, and rolls back a failing one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'timbra-migrations-'));
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      cpSync(join(dir, '20261130000000_init'), join(dir, '20261202000000_broken'), { recursive: true });
      writeFileSync(
        join(dir, '20261202000000_broken', 'migration.sql'),
        'CREATE TABLE "half_done" (id int); SELECT no_such_function();',
      );
      expect((await migrationStatus(db.url, dir)).pending).toEqual(['20261202000000_broken']);
      await expect(migrate(db.url, dir)).rejects.toThrow(/20261202000000_broken failed/);
      expect(await query(`SELECT to_regclass('half_done') AS t`)).toEqual([{ t: null }]);

      writeFileSync(join(dir, '20261130000000_init', 'migration.sql'), '-- edited after being applied');
      expect((await migrationStatus(db.url, dir)).modified).toContain('20261130000000_init');
      await expect(migrate(db.url, dir)).rejects.toThrow(/modified/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a connection lost mid-migration (Postgres restarted, or the backend killed) fails the run with why, not a crash', async () => {
    // Once the migrations above are applied, a slow one: its backend is terminated while it runs, as
    // a Postgres restart would. node-postgres rejects the statement and also emits `error` on the
    // client, which with nobody listening is an uncaught exception: the CLI would die with a stack.
    const dir = mkdtempSync(join(tmpdir(), 'timbra-migrations-'));
    const uncaught: unknown[] = [];
    const hear = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', hear);
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true });
      cpSync(join(dir, '20261130000000_init'), join(dir, '29991231000000_slow'), { recursive: true });
      writeFileSync(join(dir, '29991231000000_slow', 'migration.sql'), 'SELECT pg_sleep(30);');
      await migrate(db.url, MIGRATIONS_DIR);
      const run = migrate(db.url, dir);
      const sleeping = async () =>
        (
          await query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()`,
          )
        ).map((r) => r.pid);
      let pids: number[] = [];
      for (let i = 0; i < 100 && pids.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        pids = await sleeping();
      }
      expect(pids).toHaveLength(1);
      await query(`SELECT pg_terminate_backend(${pids[0]})`);
      await expect(run).rejects.toThrow(
        /29991231000000_slow failed: terminating connection due to administrator command/,
      );
      await new Promise((r) => setTimeout(r, 100));
      expect(uncaught).toEqual([]);
      expect((await migrationStatus(db.url, dir)).pending).toEqual(['29991231000000_slow']);
    } finally {
      process.removeListener('uncaughtException', hear);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says before applying anything that a server without lz4 cannot take the lz4 migration', async () => {
    // A PostgreSQL built without lz4 cannot run here (Debian's has it): the server's side is asked of
    // the real server, the decision is checked for both answers.
    const [server] = await query<{ lz4: boolean }>(
      `SELECT 'lz4' = ANY(enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`,
    );
    expect(server?.lz4).toBe(true);
    const files = readMigrations(MIGRATIONS_DIR);
    expect(unmetRequirements(files, { lz4: true })).toEqual([]);
    const unmet = unmetRequirements(files, { lz4: false });
    expect(unmet).toHaveLength(1);
    expect(unmet[0]).toMatch(/^20270110000000_documents_lz4 compresses documents with lz4.*--with-lz4/);
    // Once it is applied, nothing pending needs lz4 any more.
    expect(
      unmetRequirements(
        files.filter((f) => f.name > '20270110000000_documents_lz4'),
        { lz4: false },
      ),
    ).toEqual([]);
  });
});
