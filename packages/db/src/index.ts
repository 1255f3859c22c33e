/**
 * @timbra/db — the one door to Timbra's data. Every read and write of the apps is a function here,
 * one entry per table group: `@timbra/db/invoices`, `/payments`, `/tickets`, `/catalog`, `/outbox`,
 * `/deliveries`, `/webhook-events`, `/keys`, `/retention`, `/redis`. This main entry holds what they
 * share: the Prisma client (`createPrisma`), the row types, the migrations runner, the lean runner of
 * the hot path and how a database failure is read. The outbox write, the folio counter and each
 * status write exist once, in their group; apps never call Prisma's model methods (lint refuses it).
 */
import pg from 'pg';
import { organizationSession } from './organizations/session.ts';
import { heardForLife, plannedOnceSessionsBeside } from './lean.ts';
import { prismaOver } from './client.ts';
import type { PrismaClient } from './generated/client.ts';

export { PrismaClient, Prisma } from './generated/client.ts';

export type {
  Emisor,
  Serie,
  WebhookEvent,
  Payment,
  Refund,
  Installment,
  CancelRequest,
  Invoice,
  InvoiceVersion,
  InvoiceCorrection,
  OutboxRow,
  OutboxRedrive,
  PacAttempt,
  ApiClient,
  IdempotencyKey,
  Ticket,
  GlobalPeriod,
} from './generated/client.ts';
export {
  migrate,
  migrationStatus,
  readMigrations,
  ensureDatabase,
  unmetRequirements,
  type MigrationStatus,
  type ServerFeatures,
} from './migrate.ts';
export { MIGRATIONS_DIR } from './paths.ts';
export { type Db, type RawDb, type Tx } from './sql.ts';
export { isUuid } from './light.ts';
export { heardForLife, leanDb, plannedOnce, type LeanDb } from './lean.ts';
export { GroupCommit, type GroupCommitOptions } from './group-commit.ts';
export { hasUnstorableText, isStorableText } from './text.ts';
export { pingDatabase } from './health.ts';
export {
  changeMetadata,
  metadataKeyProblems,
  metadataProblems,
  metadataValueProblems,
  metadataWhere,
  newMetadata,
  providerMetadata,
  METADATA_LIMITS,
  type Metadata,
  type MetadataTable,
} from './metadata.ts';
export {
  databaseTrouble,
  isTransactionConflict,
  NoConnectionFree,
  PASSING_TROUBLES,
  retryOnConflict,
  type DatabaseTroubleKind,
} from './database-trouble.ts';

/**
 * A Prisma client on the pg driver adapter. `poolSize` defaults to 10 connections. Its pool is ours,
 * shared with the lean runner of the hot path (`leanDb(prisma)`), which also has up to two sessions
 * of its own for the statements it plans once (`plannedOnce`); `$disconnect()` ends them all.
 *
 * With `organization`, every session works for that organization alone: it runs as the role
 * timbra_app, which row-level security restricts to the rows of the organization named in app.org
 * (migration 20261219000000). Without it, the client is the database owner's: migrations, the
 * organizations' rows themselves (`@timbra/db/organizations`), tests' set-up.
 */
export function createPrisma(
  databaseUrl: string,
  options: { poolSize?: number; organization?: string } = {},
): PrismaClient {
  const sessionOptions = organizationSession(options.organization);
  // A connection that breaks (Postgres restarted) fails its holder's next statement and is dropped;
  // the next statement gets a new one. Unheard, the break would end the process.
  const pool = heardForLife(
    new pg.Pool({
      connectionString: databaseUrl,
      max: options.poolSize ?? 10,
      ...(sessionOptions ? { options: sessionOptions } : {}),
    }),
  );
  return prismaOver(pool, plannedOnceSessionsBeside(pool, databaseUrl, sessionOptions));
}
export { afterCursor, pageWindow, type Cursor, type PageQuery } from './pages.ts';
