/**
 * Test support: a fresh, migrated database per test file on the local Postgres, dropped afterwards.
 * Not part of the runtime API (exported as `@timbra/db/testing`).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, migrate } from './migrate.ts';
import { MIGRATIONS_DIR } from './paths.ts';

/** Server the test databases are created on: `$TEST_DATABASE_URL`, default the local trust-auth Postgres. */
export const TEST_SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  drop: () => Promise<void>;
}

/** Creates `timbra_test_<random>` and (unless `migrated: false`) applies every migration. */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `timbra_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(TEST_SERVER_URL);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  if (options.migrated !== false) await migrate(url.toString(), MIGRATIONS_DIR);
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const admin = new pg.Client({ connectionString: TEST_SERVER_URL });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
