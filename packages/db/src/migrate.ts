import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Applies the SQL migrations in `prisma/migrations/<name>/migration.sql`, in name order, recording
 * them in Prisma's own `_prisma_migrations` table (same columns and checksums as `prisma migrate
 * deploy`), so the database looks the same whichever tool applied it.
 *
 * Why not `prisma migrate deploy`: the Prisma CLI needs a native schema engine downloaded from the
 * internet, which some machines (CI here, air-gapped deploys) cannot reach. This runner needs only
 * Postgres. Several processes may run it at once (api and worker containers): an advisory lock
 * serialises them; each migration is applied in its own transaction.
 */

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
  /** Applied migrations whose file changed since (or disappeared): a drift to resolve by hand. */
  modified: string[];
}

// Arbitrary constant: the advisory lock all migrators agree on.
const MIGRATION_LOCK = 7_243_311_902;

export function readMigrations(dir: string): MigrationFile[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

async function appliedRows(client: pg.ClientBase): Promise<Map<string, string>> {
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS t`);
  if (!exists.rows[0]?.t) return new Map();
  const rows = await client.query<{ migration_name: string; checksum: string }>(
    `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  return new Map(rows.rows.map((r) => [r.migration_name, r.checksum]));
}

function compare(files: MigrationFile[], applied: Map<string, string>): MigrationStatus {
  const names = new Set(files.map((f) => f.name));
  return {
    applied: files.filter((f) => applied.has(f.name)).map((f) => f.name),
    pending: files.filter((f) => !applied.has(f.name)).map((f) => f.name),
    modified: [
      ...files.filter((f) => applied.has(f.name) && applied.get(f.name) !== f.checksum).map((f) => f.name),
      ...[...applied.keys()].filter((n) => !names.has(n)),
    ],
  };
}

/**
 * A connection of the runner's own. A connection that breaks (Postgres restarted, the backend
 * terminated) rejects the statement in flight, which says why; node-postgres also emits `error` on
 * the client, which unheard would be an uncaught exception — the CLI dying with a stack instead.
 */
async function connect(databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Which migrations are applied, pending, or modified after being applied. */
export async function migrationStatus(databaseUrl: string, migrationsDir: string): Promise<MigrationStatus> {
  const client = await connect(databaseUrl);
  try {
    return compare(readMigrations(migrationsDir), await appliedRows(client));
  } finally {
    await client.end();
  }
}

/** What the server offers that a migration may need (read before any is applied). */
export interface ServerFeatures {
  /** Built `--with-lz4`: `SET COMPRESSION lz4` works. */
  lz4: boolean;
}

async function serverFeatures(client: pg.ClientBase): Promise<ServerFeatures> {
  const { rows } = await client.query<{ lz4: boolean }>(
    `SELECT 'lz4' = ANY(enumvals) AS lz4 FROM pg_settings WHERE name = 'default_toast_compression'`,
  );
  return { lz4: rows[0]?.lz4 === true };
}

/**
 * Why `pending` cannot be applied on a server with `features`, one line each (empty when they can):
 * said before anything is applied, instead of a migration failing halfway through the list.
 */
export function unmetRequirements(pending: readonly MigrationFile[], features: ServerFeatures): string[] {
  return pending
    .filter((file) => !features.lz4 && /\bCOMPRESSION\s+lz4\b/i.test(file.sql))
    .map(
      (file) =>
        `${file.name} compresses documents with lz4, and this PostgreSQL was built without it (--with-lz4): use a build with lz4 (Debian's and the PGDG packages, the official images and the managed services have it)`,
    );
}

/**
 * Applies pending migrations. Returns the names applied.
 *
 * @throws Error when an applied migration was modified (never silently re-applied), when the server
 *   lacks what a pending migration needs (nothing applied), or when a migration fails (its
 *   transaction is rolled back and the failure recorded in `logs`).
 */
export async function migrate(
  databaseUrl: string,
  migrationsDir: string,
  log: (message: string) => void = () => undefined,
): Promise<string[]> {
  const files = readMigrations(migrationsDir);
  const client = await connect(databaseUrl);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(CREATE_TABLE);
    const status = compare(files, await appliedRows(client));
    if (status.modified.length > 0) {
      throw new Error(`applied migrations were modified or removed: ${status.modified.join(', ')}`);
    }
    const pending = files.filter((f) => status.pending.includes(f.name));
    const unmet = unmetRequirements(pending, await serverFeatures(client));
    if (unmet.length > 0) throw new Error(`cannot migrate this database: ${unmet.join('; ')}`);
    const done: string[] = [];
    for (const file of pending) {
      const id = randomUUID();
      log(`applying ${file.name}`);
      await client.query('BEGIN');
      try {
        await client.query(`INSERT INTO "_prisma_migrations" (id, checksum, migration_name) VALUES ($1, $2, $3)`, [
          id,
          file.checksum,
          file.name,
        ]);
        await client.query(file.sql);
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        );
        await client.query('COMMIT');
      } catch (error) {
        // On a lost connection there is nothing to roll back (Postgres did): keep the first error.
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${file.name} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(file.name);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await client.end();
  }
}

/** Creates the database named in `databaseUrl` when it does not exist (connecting to `postgres`). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`refusing to create a database named ${JSON.stringify(name)}`);
  url.pathname = '/postgres';
  const client = await connect(url.toString());
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    await client.query(`CREATE DATABASE "${name}"`);
    return true;
  } finally {
    await client.end();
  }
}
