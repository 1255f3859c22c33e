import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { MIGRATIONS_DIR } from '../src/index.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing.ts';

// Distributing by organization (Citus) asks of the schema what Citus enforces when a table is
// distributed: every primary key and unique index of a distributed table holds the distribution
// column, every foreign key between two of them joins on it, a reference table never points at a
// distributed one, and a table is distributed after the tables it points at. deploy/citus/distribute.sql
// says which table is which; these tests hold the migrated schema and that script to each other, so a
// new table, key or foreign key that could not be distributed fails here, not on a cluster.

const SCRIPT = resolve(MIGRATIONS_DIR, '../../deploy/citus/distribute.sql');
const COLUMN = 'organization_id';

interface Plan {
  reference: string[];
  distributed: string[];
  /** Foreign keys the script drops before distributing and adds again after. */
  deferred: string[];
  readded: string[];
}

function planOf(script: string): Plan {
  const all = (re: RegExp) => [...script.matchAll(re)].map((m) => m[1]!);
  return {
    reference: all(/create_reference_table\('(\w+)'\)/g),
    distributed: all(/create_distributed_table\('(\w+)', 'organization_id'/g),
    deferred: all(/ALTER TABLE \w+ DROP CONSTRAINT (\w+);/g),
    readded: all(/ALTER TABLE \w+ ADD CONSTRAINT (\w+)\s/g),
  };
}

interface Key {
  table: string;
  name: string;
  columns: string[];
  primary: boolean;
  /** Its columns that may be NULL. */
  nullable: string[];
  /** Its WHERE, as Postgres prints it; null for a whole-table index. */
  predicate: string | null;
  nullsNotDistinct: boolean;
}
interface ForeignKey {
  table: string;
  name: string;
  columns: string[];
  parent: string;
  parentColumns: string[];
  /** The columns ON DELETE SET NULL / SET DEFAULT sets: null = all of the key's. */
  setColumns: string[] | null;
  onDelete: string;
}

let db: TestDatabase;
let sql: pg.Client;
let tables: string[];
let keys: Key[];
let foreignKeys: ForeignKey[];
let notNull: Set<string>;
const plan = planOf(readFileSync(SCRIPT, 'utf8'));

beforeAll(async () => {
  db = await createTestDatabase();
  sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
  tables = (
    await sql.query<{ t: string }>(
      `SELECT relname AS t FROM pg_class
       WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND relname <> '_prisma_migrations'`,
    )
  ).rows.map((r) => r.t);
  const cols = `ARRAY(SELECT a.attname::text FROM unnest(%s) WITH ORDINALITY AS k(n, i)
                 JOIN pg_attribute a ON a.attrelid = %s AND a.attnum = k.n ORDER BY k.i)`;
  keys = (
    await sql.query<Key>(
      `SELECT t.relname AS table, x.relname AS name, i.indisprimary AS primary,
              ${cols.replace('%s', 'i.indkey::int2[]').replace('%s', 'i.indrelid')} AS columns,
              ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) AS k(n)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n
                    WHERE NOT a.attnotnull ORDER BY a.attname) AS nullable,
              pg_get_expr(i.indpred, i.indrelid) AS predicate, i.indnullsnotdistinct AS "nullsNotDistinct"
       FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
       WHERE t.relnamespace = 'public'::regnamespace AND i.indisunique`,
    )
  ).rows;
  foreignKeys = (
    await sql.query<ForeignKey>(
      `SELECT c.conrelid::regclass::text AS table, c.conname AS name, c.confrelid::regclass::text AS parent,
              ${cols.replace('%s', 'c.conkey').replace('%s', 'c.conrelid')} AS columns,
              ${cols.replace('%s', 'c.confkey').replace('%s', 'c.confrelid')} AS "parentColumns",
              CASE WHEN c.confdelsetcols IS NULL THEN NULL
                   ELSE ${cols.replace('%s', 'c.confdelsetcols').replace('%s', 'c.conrelid')} END AS "setColumns",
              c.confdeltype AS "onDelete"
       FROM pg_constraint c WHERE c.connamespace = 'public'::regnamespace AND c.contype = 'f'`,
    )
  ).rows;
  notNull = new Set(
    (
      await sql.query<{ t: string }>(
        `SELECT table_name AS t FROM information_schema.columns
         WHERE table_schema = 'public' AND column_name = $1 AND is_nullable = 'NO'`,
        [COLUMN],
      )
    ).rows.map((r) => r.t),
  );
});
afterAll(async () => {
  await sql.end();
  await db.drop();
});

describe('the schema, distributed by organization (deploy/citus/distribute.sql)', () => {
  it('names every table once: a reference table or one distributed by organization_id', () => {
    const named = [...plan.reference, ...plan.distributed];
    expect(new Set(named).size).toBe(named.length);
    expect([...named].sort()).toEqual([...tables].sort());
    expect(plan.reference.sort()).toEqual([
      'api_clients',
      'emisores',
      'invoice_status_transitions',
      'provider_accounts',
    ]);
  });

  it('gives each distributed table a NOT NULL organization_id in its primary key and every unique index', () => {
    const missing = plan.distributed.filter((t) => !notNull.has(t));
    expect(missing).toEqual([]);
    const without = keys
      .filter((k) => plan.distributed.includes(k.table) && !k.columns.includes(COLUMN))
      .map((k) => `${k.table}.${k.name}(${k.columns.join(', ')})`);
    expect(without).toEqual([]);
    const primaries = keys.filter((k) => k.primary && plan.distributed.includes(k.table)).map((k) => k.table);
    expect(primaries.sort()).toEqual([...plan.distributed].sort());
  });

  it('leaves NULLs out of every unique index over a column that may be NULL', async () => {
    // NULLs never conflict, so indexing them only costs: each write leaving the column NULL would
    // enter it, and each non-HOT update again (an Ingreso's refund_id, its uuid until stamped).
    const nullable = keys.filter((k) => k.nullable.length > 0);
    expect(nullable.map((k) => k.name)).toEqual(
      expect.arrayContaining(['invoices_refund_id_key', 'invoices_uuid_key']),
    );
    // A delivery's channel says which of its targets it has (CHECK deliveries_target), and these
    // two hold one channel's rows only: no NULL enters them.
    const byChannel = ['deliveries_once_email', 'deliveries_once_webhook'];
    const target = await sql.query<{ def: string }>(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'deliveries_target'`,
    );
    expect(target.rows[0]?.def).toContain("(channel = 'webhook'::text) = (endpoint_id IS NOT NULL)");
    expect(target.rows[0]?.def).toContain("(channel = 'email'::text) = (recipient IS NOT NULL)");
    const channelOnly = nullable.filter((k) => byChannel.includes(k.name)).sort((a, b) => a.name.localeCompare(b.name));
    expect(channelOnly.map((k) => k.predicate)).toEqual([
      expect.stringContaining("channel = 'email'"),
      expect.stringContaining("channel = 'webhook'"),
    ]);
    const indexingNulls = nullable
      .filter((k) => !k.nullsNotDistinct && !byChannel.includes(k.name))
      .filter((k) => k.nullable.some((c) => !new RegExp(`\\(${c} IS NOT NULL\\)`).test(k.predicate ?? '')))
      .map((k) => `${k.name}(${k.nullable.join(', ')}) WHERE ${k.predicate ?? '-'}`);
    expect(indexingNulls).toEqual([]);
  });

  it('joins every foreign key between distributed tables on organization_id, and never sets it null', () => {
    const between = foreignKeys.filter(
      (f) => plan.distributed.includes(f.table) && plan.distributed.includes(f.parent),
    );
    expect(between.length).toBeGreaterThan(25);
    const wrong = between
      .filter((f) => {
        const at = f.columns.indexOf(COLUMN);
        return at < 0 || f.parentColumns[at] !== COLUMN;
      })
      .map((f) => f.name);
    expect(wrong).toEqual([]);
    // 'n' SET NULL, 'd' SET DEFAULT: only with a column list that leaves the organization alone.
    const nulling = foreignKeys
      .filter((f) => (f.onDelete === 'n' || f.onDelete === 'd') && (!f.setColumns || f.setColumns.includes(COLUMN)))
      .map((f) => f.name);
    expect(nulling).toEqual([]);
  });

  it('points no reference table at a distributed one', () => {
    const wrong = foreignKeys
      .filter((f) => plan.reference.includes(f.table) && !plan.reference.includes(f.parent))
      .map((f) => f.name);
    expect(wrong).toEqual([]);
  });

  it('distributes each table after the ones it points at, but for the foreign keys it adds again after', () => {
    expect([...plan.readded].sort()).toEqual([...plan.deferred].sort());
    const order = (t: string) => plan.distributed.indexOf(t);
    const early = foreignKeys
      .filter((f) => plan.distributed.includes(f.table) && plan.distributed.includes(f.parent) && f.table !== f.parent)
      .filter((f) => !plan.deferred.includes(f.name) && order(f.parent) > order(f.table))
      .map((f) => `${f.name}: ${f.table} before ${f.parent}`);
    expect(early).toEqual([]);
  });

  it('adds the deferred foreign keys again as the migrations made them', () => {
    const script = readFileSync(SCRIPT, 'utf8');
    for (const name of plan.deferred) {
      const fk = foreignKeys.find((f) => f.name === name);
      expect(fk).toBeDefined();
      const added = new RegExp(
        `ADD CONSTRAINT ${name}\\s+FOREIGN KEY \\(([^)]*)\\) REFERENCES (\\w+) \\(([^)]*)\\)`,
      ).exec(script);
      expect(added?.slice(1)).toEqual([fk!.columns.join(', '), fk!.parent, fk!.parentColumns.join(', ')]);
    }
  });
});
