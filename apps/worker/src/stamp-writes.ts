/**
 * The stamper's statements, batched across its concurrent jobs (group commit, as the API's ingest):
 * loads, write-ahead PAC-call records and persisted stamps submitted while one of the same kind is
 * running go together in the next statement — one round trip, one commit. Nothing waits on a timer:
 * a lone job's statement starts at once, so a quiet worker runs batches of one. Each stamp is still
 * persisted atomically with its outbox row and ledger (one statement); a batch that fails is retried
 * item by item, so one bad stamp fails only its own job.
 */
import {
  GroupCommit,
  loadStampRows,
  persistStamps,
  recordPacCallsInFlight,
  type GroupCommitOptions,
  type PacCallInFlight,
  type PersistedStamp,
  type PrismaClient,
  type StampRow,
  type StampToPersist,
} from '@timbra/db';

export interface StampWrites {
  load(outboxId: string): Promise<StampRow | undefined>;
  /** Whether the call may be made (false once a correction holds the row). */
  recordInFlight(call: PacCallInFlight): Promise<boolean>;
  persist(stamp: StampToPersist): Promise<PersistedStamp>;
}

/** Default: up to 64 jobs' statements in one; two statements of a kind at once (the pool has more). */
export const STAMP_WRITES_DEFAULTS: GroupCommitOptions = { maxBatch: 64, maxInFlight: 2 };

export function stampWrites(prisma: PrismaClient, options: GroupCommitOptions = STAMP_WRITES_DEFAULTS): StampWrites {
  const load = GroupCommit.statement(prisma, (db, ids: string[]) => loadStampRows(db, ids), options);
  const inFlight = GroupCommit.statement(
    prisma,
    (db, calls: PacCallInFlight[]) => recordPacCallsInFlight(db, calls),
    options,
  );
  const persist = GroupCommit.statement(prisma, (db, stamps: StampToPersist[]) => persistStamps(db, stamps), options);
  return {
    load: (outboxId) => load.submit(outboxId),
    recordInFlight: (call) => inFlight.submit(call),
    persist: (stamp) => persist.submit(stamp),
  };
}
