/**
 * @timbra/db — the Prisma client both apps use, the migrations runner, the invoice state machine and
 * the queue contract between the outbox and the stamp workers.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client.ts';

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
  OutboxRow,
  PacAttempt,
  ApiClient,
  IdempotencyKey,
} from './generated/client.ts';
export { migrate, migrationStatus, readMigrations, ensureDatabase, type MigrationStatus } from './migrate.ts';
export {
  INVOICE_STATUSES,
  assertTransition,
  canTransition,
  InvalidTransitionError,
  type InvoiceStatus,
} from './invoice-status.ts';
export { MIGRATIONS_DIR } from './paths.ts';
export { redriveOutboxRow, type RedriveResult } from './redrive.ts';
export { insertCancelRequest, requestDuplicateCancellation, type DuplicateCancellation } from './cancellations.ts';
export { purgeExpiredIdempotencyKeys } from './idempotency-keys.ts';
export { OUTBOX_CHANNEL, STAMP_DLQ, STAMP_QUEUE, type DeadLetterData, type StampJobData } from './queues.ts';

/** A Prisma client on the pg driver adapter. `poolSize` defaults to 10 connections. */
export function createPrisma(databaseUrl: string, options: { poolSize?: number } = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 }) });
}
