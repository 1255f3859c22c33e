/**
 * `@timbra/db/light`: what a command line needs to parse and check its arguments before it opens
 * anything — names and predicates with no Prisma, pg, ioredis or zod behind them. The ops CLI
 * imports these at start-up and the rest of `@timbra/db` only when a command runs, so `--help` and a
 * usage mistake answer without loading the data layer, and its last catch reads a database failure
 * with `databaseTrouble`. Each is defined here or in a module as light (api-keys.ts,
 * database-trouble.ts); the package's main entry re-exports them, so there is one definition of each.
 */
export { API_KEY_NAME_RULE, DEFAULT_SCOPES, isApiKeyName, isScope, SCOPES, type Scope } from './keys/api-keys.ts';
export { databaseTrouble, NoConnectionFree, PASSING_TROUBLES, type DatabaseTroubleKind } from './database-trouble.ts';

/** Whether `value` is a UUID in canonical text form (any version): the only shape our ids have. */
export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
