import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { databaseWithEmisor } from '../src/testing.ts';

// timbra_uuid7(): the ids Postgres gives the rows written on every payment, time-ordered.

let db: Awaited<ReturnType<typeof databaseWithEmisor>>;
let sql: pg.Client;
beforeAll(async () => {
  db = await databaseWithEmisor();
  sql = db.sql;
});
afterAll(async () => {
  await db.close();
});

describe('timbra_uuid7', () => {
  it('is a version-7 UUID (RFC 9562): Unix milliseconds, version 7, variant 10, random bits', async () => {
    const { rows } = await sql.query<{ id: string; ms: string }>(
      `SELECT timbra_uuid7(at) AS id, floor(extract(epoch FROM at) * 1000)::bigint AS ms
       FROM (VALUES (timestamptz '2026-12-01 12:34:56.789+00'), (timestamptz '1970-01-01 00:00:00.001+00'),
                    (timestamptz '2999-12-31 23:59:59.999+00')) AS t(at)`,
    );
    for (const { id, ms } of rows) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(BigInt(`0x${id.replace(/-/g, '').slice(0, 12)}`)).toBe(BigInt(ms));
    }
  });

  it('sorts by time and differs within one millisecond', async () => {
    const { rows } = await sql.query<{ id: string }>(
      `SELECT timbra_uuid7(timestamptz '2026-01-01' + make_interval(secs => g)) AS id FROM generate_series(1, 500) g`,
    );
    const ids = rows.map((r) => r.id);
    expect([...ids].sort()).toEqual(ids);
    const same = await sql.query<{ n: number }>(
      `SELECT count(DISTINCT timbra_uuid7(timestamptz '2026-01-01'))::int AS n FROM generate_series(1, 1000)`,
    );
    expect(same.rows[0]!.n).toBe(1000);
  });

  it("names a payment's rows, and the triggers' events", async () => {
    await sql.query(`INSERT INTO events (type, data) VALUES ('invoice.stamped', '{}')`);
    const { rows } = await sql.query<{ id: string }>('SELECT id::text FROM events');
    expect(rows[0]!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });
});
