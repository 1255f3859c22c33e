/**
 * `npm run db:migrate [-- status] [--create-db]` — applies pending migrations to $DATABASE_URL, or
 * lists their status. Exit 0 on success; 1 on failure or (status) when migrations are pending or
 * modified.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { databaseTrouble } from '../database-trouble.ts';
import { ensureDatabase, migrate, migrationStatus } from '../migrate.ts';
import { MIGRATIONS_DIR } from '../paths.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'create-db': { type: 'boolean', default: false } },
});
// As the apps read it: DATABASE_URL, or the file DATABASE_URL_FILE names (compose `secrets:`).
const file = process.env.DATABASE_URL_FILE;
const url = process.env.DATABASE_URL ?? (file ? readFileSync(file, 'utf8').replace(/\r?\n$/, '') : undefined);
if (!url) {
  process.stderr.write('DATABASE_URL (or DATABASE_URL_FILE) is not set\n');
  process.exit(1);
}
const log = (m: string) => process.stdout.write(`${m}\n`);
const redacted = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

try {
  if (positionals[0] === 'status') {
    const s = await migrationStatus(url, MIGRATIONS_DIR);
    log(`database ${redacted}`);
    log(
      `applied: ${s.applied.length}, pending: ${s.pending.join(', ') || 'none'}, modified: ${s.modified.join(', ') || 'none'}`,
    );
    process.exitCode = s.pending.length + s.modified.length > 0 ? 1 : 0;
  } else {
    if (values['create-db'] && (await ensureDatabase(url))) log(`created database ${redacted}`);
    const applied = await migrate(url, MIGRATIONS_DIR, log);
    log(applied.length > 0 ? `applied ${applied.length} migration(s)` : 'database is up to date');
  }
} catch (error) {
  // Postgres down, the database missing (without --create-db) or the login refused: say what to fix.
  // (A migration's own statement failing is reported as Postgres said it.)
  const trouble = databaseTrouble(error);
  const reason = trouble && trouble.kind !== 'not_migrated' ? trouble.message : (error as Error).message;
  process.stderr.write(`migration failed: ${reason}\n`);
  process.exitCode = 1;
}
