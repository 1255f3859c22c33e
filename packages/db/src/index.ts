/**
 * @timbra/db — the Prisma client both apps use, the migrations runner, the invoice state machine, the
 * queue contract between the outbox and the workers, and every raw SQL statement of the project: one
 * typed function per statement, grouped by aggregate (outbox, folios, invoices, payments, …), so the
 * outbox write, the folio counter and each status write exist once. Apps call these; they never write
 * SQL themselves.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { heardForLife, leanDbOver, plannedOnceSessionsBeside, registerLeanDb } from './lean.ts';
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
export { migrate, migrationStatus, readMigrations, ensureDatabase, type MigrationStatus } from './migrate.ts';
export {
  INVOICE_STATUSES,
  INITIAL_STATUSES,
  TRANSITIONS,
  assertTransition,
  canTransition,
  statusGuard,
  InvalidTransitionError,
  type InvoiceStatus,
} from './invoice-status.ts';
export { MIGRATIONS_DIR } from './paths.ts';
export { type Db, type RawDb, type Tx } from './sql.ts';
export { isUuid } from './light.ts';
export { heardForLife, leanDb, plannedOnce, type LeanDb } from './lean.ts';
export { GroupCommit, type GroupCommitOptions } from './group-commit.ts';
export { takeFolio, ensureSeries, SerieNotConfiguredError } from './folios.ts';
export {
  OUTBOX_CHANNEL,
  enqueueOutbox,
  notifyOutbox,
  claimOutboxBatch,
  outboxCountsByStatus,
  republishEnqueuedOutboxRows,
  staleEnqueuedOutboxRows,
  oldestOpenOutboxAgeSeconds,
  listenForOutbox,
  type OutboxKind,
  type OutboxRowToWrite,
  type ClaimedOutboxRow,
} from './outbox.ts';
export {
  insertInvoices,
  lockInvoice,
  lockInvoiceShared,
  dependentsWaitingForEach,
  invoiceStateOf,
  invoicesNeedingData,
  ingresoOf,
  invoiceByUuid,
  standingRelatedCount,
  markCancelRequested,
  lockWaitingDependents,
  markDependentFrozen,
  markDependentNeedsData,
  invoicesWithOverdueDependents,
  type InvoiceKind,
  type FrozenDocument,
  type NewInvoice,
  type InvoiceState,
  type WaitingDependent,
} from './invoices.ts';
export {
  insertPaymentsTakingFolios,
  insertPaymentsWithoutFolios,
  lockPayment,
  refundedTotal,
  reverseRefund,
  reversedRefundsStanding,
  insertRefund,
  knownPayments,
  refundByProviderId,
  standingRefundLines,
  type NewPayment,
  type InsertedPayment,
  type KnownPayment,
  type LockedPayment,
} from './payments.ts';
export {
  TICKET_STATUSES,
  globalBacklog,
  insertTickets,
  lockGlobalPeriod,
  lockOpenTickets,
  lockTicket,
  markTicketSelfInvoiced,
  periodsWithOpenTickets,
  recordGlobalPeriod,
  refundOpenTicket,
  ticketByDownloadToken,
  type NewGlobalPeriod,
  type NewTicket,
  type PeriodKey,
  type TicketState,
  type TicketStatus,
} from './tickets.ts';
export {
  lockInvoiceForInstallment,
  installmentAmounts,
  installmentsPaid,
  insertInstallment,
  installmentByProviderId,
  type InstallmentInvoice,
  type NewInstallment,
} from './installments.ts';
export { claimWebhookEvents, type ReceivedEvent } from './webhook-events.ts';
export { hasUnstorableText, isStorableText } from './text.ts';
export {
  SCOPES,
  DEFAULT_SCOPES,
  API_KEY_NAME_RULE,
  isApiKeyName,
  hashApiKey,
  keyPrefix,
  isScope,
  createApiKey,
  listApiKeys,
  revokeApiKey,
  findApiKey,
  touchApiKey,
  syncConfiguredApiKeys,
  ApiKeyNameTaken,
  type Scope,
  type ApiKeyView,
} from './api-keys.ts';
export {
  loadStampRow,
  loadStampRows,
  recordPacCallInFlight,
  recordPacCallsInFlight,
  persistStamp,
  persistStamps,
  recordFailedAttempt,
  deadLetterOutboxRow,
  type StampRow,
  type PacCallRecord,
  type PersistedStamp,
  type PacCallInFlight,
  type StampToPersist,
} from './stamping.ts';
export { redriveOutboxRow, refusedForGood, type RedriveBy, type RedriveResult } from './redrive.ts';
export {
  deadLetterCount,
  deadLetterState,
  redriveDeadLetter,
  settleDeadLetters,
  type DeadLetterQueue,
  type DeadLetterState,
} from './dead-letters.ts';
export {
  lockCorrectableInvoice,
  pacsThatReceived,
  holdStampRow,
  releaseStampRow,
  freezeVersion,
  insertCorrection,
  claimDueCorrections,
  settleCorrection,
  correctionsProving,
  lateInvoices,
  startLateRefreezes,
  type CorrectableInvoice,
  type ReceivingPac,
  type NewVersion,
  type NewCorrection,
  type ProvingCorrection,
  type CorrectionOutcome,
  type CorrectionPayload,
} from './versions.ts';
export {
  insertCancelRequest,
  requestDuplicateCancellation,
  requestReplacedCancellation,
  replacementsAwaitingCancellation,
  type ReplacedCancellation,
  loadCancelRow,
  finishCancellation,
  type DuplicateCancellation,
  type CancelRow,
} from './cancellations.ts';
export { purgeExpiredIdempotencyKeys, tryLockIdempotencyKey } from './idempotency-keys.ts';
export {
  DEFAULT_RETENTION,
  pruneHistory,
  RETENTION_TABLES,
  retentionDays,
  type PruneOptions,
  type RetentionPolicy,
  type RetentionTable,
} from './retention.ts';
export { pingDatabase } from './health.ts';
export {
  databaseTrouble,
  isTransactionConflict,
  retryOnConflict,
  type DatabaseTroubleKind,
} from './database-trouble.ts';
export {
  STAMP_DLQ,
  STAMP_QUEUE,
  JOBS,
  jobIdFor,
  parseStampJob,
  UnknownJobError,
  type DeadLetterData,
  type StampJobData,
  type StampJobName,
} from './queues.ts';
export {
  assertClusterPrefix,
  bullmqErrorListener,
  connectRedis,
  isJobGoneFromRedis,
  isRedisConnectionError,
  logRedisOutages,
  maxmemoryPolicies,
  redisConfigProblems,
  redisTarget,
  type OutageLogger,
  type RedisConnection,
  type RedisTarget,
} from './redis.ts';

/**
 * A Prisma client on the pg driver adapter. `poolSize` defaults to 10 connections. Its pool is ours,
 * shared with the lean runner of the hot path (`leanDb(prisma)`), which also has up to two sessions
 * of its own for the statements it plans once (`plannedOnce`); `$disconnect()` ends them all.
 */
export function createPrisma(databaseUrl: string, options: { poolSize?: number } = {}): PrismaClient {
  // A connection that breaks (Postgres restarted) fails its holder's next statement and is dropped;
  // the next statement gets a new one. Unheard, the break would end the process.
  const pool = heardForLife(new pg.Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10 }));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  registerLeanDb(prisma, leanDbOver(pool, undefined, plannedOnceSessionsBeside(pool, databaseUrl)));
  // The adapter ends the pool only once Prisma itself has connected: a client used only through the
  // lean runner would keep its connections (and its process) alive after $disconnect.
  const disconnect = prisma.$disconnect.bind(prisma);
  prisma.$disconnect = async () => {
    await disconnect();
    if (!pool.ending) await pool.end();
  };
  return prisma;
}
export {
  claimDueDeliveries,
  DELIVERY_CHANNEL,
  deliveryBacklog,
  deliveryBackoffMs,
  endpointsDisabledByFailures,
  EVENT_TYPES,
  newEndpointSecret,
  recordDeliveryAttempt,
  releaseDeliveryClaim,
  replayDelivery,
  resendInvoiceEmail,
  rotateEndpointSecret,
  setEndpointStatus,
  type AttemptOutcome,
  type ClaimedDelivery,
  type DeliveryChannel,
  type DisablePolicy,
  type EventType,
} from './deliveries.ts';
export {
  addressProblem,
  allowedAddressesFor,
  allowedAddressesSetting,
  endpointAddressProblem,
  LOOPBACK_RANGES,
  parseAllowedAddresses,
  publicOnlyAgents,
} from './endpoint-addresses.ts';
