/**
 * What a failed database call means to the person running a command: Postgres not reachable, the
 * database missing, the login refused, or the schema not migrated — each as one line that says what
 * to do. The same failure reaches us in three shapes: Prisma's errors (the pg driver adapter's cause
 * in `meta.driverAdapterError`), pg's own (`code` is the SQLSTATE) and Node's socket errors
 * (`ECONNREFUSED`…); this is the one place that reads them. It only inspects the error's fields, so
 * it loads nothing (`@timbra/db/light` exports it too).
 */

import { UNREACHABLE_CODES } from './network.ts';

const UNREACHABLE = new Set<string>(UNREACHABLE_CODES);

/**
 * Every connection of a pool stayed in use for as long as a caller may wait for one: the database
 * is overloaded, or transactions hold their connections (the lean runner throws it; `databaseTrouble`
 * reads it as `busy`).
 */
export class NoConnectionFree extends Error {
  constructor(readonly waitedMs: number) {
    super(`no database connection free within ${waitedMs} ms`);
    this.name = 'NoConnectionFree';
  }
}

interface Seen {
  kind?: string;
  sqlState?: string;
  host?: string;
  port?: number | string;
  db?: string;
  message?: string;
}

function fieldsOf(error: unknown): Seen | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  if (error instanceof NoConnectionFree) return { kind: 'NoConnectionFree', message: error.message };
  const e = error as Record<string, unknown>;
  const adapter = (e.meta as { driverAdapterError?: { cause?: Record<string, unknown> } } | undefined)
    ?.driverAdapterError?.cause;
  if (adapter)
    return {
      kind: typeof adapter.kind === 'string' ? adapter.kind : undefined,
      sqlState: typeof adapter.originalCode === 'string' ? adapter.originalCode : undefined,
      host: typeof adapter.host === 'string' ? adapter.host : undefined,
      port: typeof adapter.port === 'number' ? adapter.port : undefined,
      db: typeof adapter.db === 'string' ? adapter.db : undefined,
      message: typeof adapter.originalMessage === 'string' ? adapter.originalMessage : undefined,
    };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && UNREACHABLE.has(code))
    return {
      kind: 'DatabaseNotReachable',
      host: typeof e.address === 'string' ? e.address : typeof e.hostname === 'string' ? e.hostname : undefined,
      port: typeof e.port === 'number' ? e.port : undefined,
    };
  // An AggregateError (every address of a host refused) carries the socket errors inside.
  if (Array.isArray(e.errors) && e.errors.length > 0) return fieldsOf(e.errors[0]);
  if (code && /^[0-9A-Z]{5}$/.test(code))
    return { sqlState: code, message: typeof e.message === 'string' ? e.message : undefined };
  return undefined;
}

/** Which state of the database stopped a call (a stable code for callers that branch on it). */
export type DatabaseTroubleKind = 'unreachable' | 'missing' | 'login_refused' | 'not_migrated' | 'restarting' | 'busy';

/** The troubles that pass on their own (Postgres back up, the load gone): a caller may try again shortly. */
export const PASSING_TROUBLES: ReadonlySet<DatabaseTroubleKind> = new Set(['unreachable', 'restarting', 'busy']);

/**
 * Why a database call failed, when it is the database's state rather than the statement, with a
 * one-line message that says what to do (`undefined` otherwise: the caller reports the error as it
 * is). `setting` names where the address came from, for the hint. Never repeats the connection
 * string (it may hold a password).
 */
export function databaseTrouble(
  error: unknown,
  setting = 'DATABASE_URL',
): { kind: DatabaseTroubleKind; message: string } | undefined {
  const seen = fieldsOf(error);
  if (!seen) return undefined;
  const { kind, sqlState } = seen;
  const said = seen.message ? ` (${seen.message})` : '';
  if (kind === 'DatabaseNotReachable') {
    const where = seen.host ? ` at ${seen.host}${seen.port === undefined ? '' : `:${seen.port}`}` : '';
    return { kind: 'unreachable', message: `cannot reach Postgres${where}: is it running, and is ${setting} right?` };
  }
  if (kind === 'DatabaseDoesNotExist' || sqlState === '3D000') {
    const name = seen.db ?? /database "([^"]+)"/.exec(seen.message ?? '')?.[1];
    return {
      kind: 'missing',
      message: `the database${name ? ` "${name}"` : ''} does not exist: create and migrate it with \`npm run db:migrate -- --create-db\``,
    };
  }
  if (
    kind === 'DatabaseAccessDenied' ||
    kind === 'AuthenticationFailed' ||
    sqlState === '28000' ||
    sqlState === '28P01'
  )
    return {
      kind: 'login_refused',
      message: `Postgres refused the login${said}: check the user and password in ${setting}`,
    };
  if (kind === 'TableDoesNotExist' || sqlState === '42P01')
    return { kind: 'not_migrated', message: `the database is not migrated${said}: run \`npm run db:migrate\`` };
  if (sqlState === '57P01' || sqlState === '57P03')
    return { kind: 'restarting', message: `Postgres is shutting down or starting up${said}: try again in a moment` };
  // Every connection taken: a pool's (ours) or the server's (max_connections, 53300).
  if (kind === 'NoConnectionFree' || sqlState === '53300')
    return {
      kind: 'busy',
      message: `every database connection is in use${said}: the database is overloaded, or a transaction holds its connection`,
    };
  return undefined;
}

/**
 * Whether a transaction failed only because it lost a race another transaction won: a deadlock
 * (40P01) or a serialization failure (40001). Postgres rolled it back whole, so running it again is
 * safe and usually succeeds.
 */
export function isTransactionConflict(error: unknown): boolean {
  const state = fieldsOf(error)?.sqlState;
  return state === '40P01' || state === '40001';
}

/**
 * Runs `transaction` again (up to `attempts` times in all, after a short random pause) when it fails
 * with a conflict: a deadlock is the database's business and never reaches a caller.
 */
export async function retryOnConflict<T>(transaction: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= attempts || !isTransactionConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}
