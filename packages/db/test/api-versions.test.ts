import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { API_VERSIONS, CURRENT_API_VERSION } from '../src/keys/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

// A new API version is two edits: API_VERSIONS, and a migration moving the columns' defaults to it.

let db: TestDatabase;
let sql: pg.Client;
beforeAll(async () => {
  db = await createTestDatabase();
  sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
});
afterAll(async () => {
  await sql.end();
  await db.drop();
});

describe('API versions', () => {
  it('are dated, oldest first, and the current one is the last', () => {
    expect(API_VERSIONS.every((v) => /^\d{4}-\d{2}-\d{2}$/.test(v))).toBe(true);
    expect([...API_VERSIONS].sort()).toEqual([...API_VERSIONS]);
    expect(CURRENT_API_VERSION).toBe(API_VERSIONS.at(-1));
  });

  it("give a new key and a new event the current one: the columns' defaults", async () => {
    const { rows } = await sql.query<{ table: string; value: string }>(
      `SELECT table_name AS table, column_default AS value FROM information_schema.columns
       WHERE table_schema = 'public' AND column_name = 'api_version' ORDER BY table_name`,
    );
    expect(rows).toEqual([
      { table: 'api_clients', value: `'${CURRENT_API_VERSION}'::text` },
      { table: 'events', value: `'${CURRENT_API_VERSION}'::text` },
    ]);
  });
});
