/** `@timbra/db/outbox`: the outbox write and claim, the stamp job contract (queues), the stamper's writes, redrives and dead letters. */
export {
  OUTBOX_CHANNEL,
  enqueueOutbox,
  notifyOutbox,
  claimOutboxBatch,
  outboxCountsByStatus,
  republishEnqueuedOutboxRows,
  stampRowIdOf,
  staleEnqueuedOutboxRows,
  listenForOutbox,
  type OutboxKind,
  type OutboxRowToWrite,
  type ClaimedOutboxRow,
} from './outbox.ts';
export {
  loadStampRow,
  loadStampRows,
  persistStamp,
  persistStamps,
  type StampRow,
  type FirstCall,
  type PersistedStamp,
  type StampToPersist,
} from './stamping.ts';
export {
  recordPacCallInFlight,
  recordPacCallsInFlight,
  recordFailedAttempt,
  type OfOrganization,
  type PacCallRecord,
  type PacCallInFlight,
} from './ledger.ts';
export { redriveOutboxRow, refusedForGood, type RedriveBy, type RedriveResult } from './redrive.ts';
export {
  deadLetterIds,
  deadLetterOutboxRow,
  deadLetterRows,
  outboxRowWithRedrives,
  recentRedrives,
  deadLetterState,
  redriveDeadLetter,
  settleDeadLetters,
  ownsLetter,
  type LetterOwner,
  type DeadLetterQueue,
  type DeadLetterState,
} from './dead-letters.ts';
export {
  STAMP_DLQ,
  STAMP_QUEUE,
  JOBS,
  newGroupJobId,
  jobIdFor,
  parseStampJob,
  UnknownJobError,
  type DeadLetterData,
  type ParsedStampJob,
  type StampGroupData,
  type StampJobData,
  type StampJobName,
  type StampQueueData,
} from './queues.ts';
export { claimOutboxAcross, claimOutboxShare, type ClaimedOf, type OutboxShare } from './share.ts';
