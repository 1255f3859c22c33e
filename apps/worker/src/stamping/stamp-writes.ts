/**
 * The stamper's statements, batched across its concurrent jobs (group commit, as the API's ingest):
 * loads, write-ahead PAC-call records and persisted stamps submitted while one of the same kind is
 * running go together in the next statement — one round trip, one
 * commit. Nothing waits on a timer: a lone job's statement starts at once, so a quiet worker runs
 * batches of one. Each stamp is still persisted atomically with its outbox row and ledger (one
 * statement); a batch that fails is retried item by item, so one bad stamp fails only its own job.
 *
 * In platform mode the batches are the deployment's, not an organization's (`stampWritesAcross`):
 * with payments spread over many organizations, each organization's batch held one job.
 */
import { GroupCommit, leanDb, type GroupCommitOptions, type PrismaClient, type RawDb } from '@timbra/db';
import type { SeveralOrganizations } from '@timbra/db/organizations';
import {
  loadStampRows,
  persistStamps,
  recordPacCallsInFlight,
  type FirstCall,
  type PacCallInFlight,
  type PersistedStamp,
  type StampRow,
  type StampToPersist,
} from '@timbra/db/outbox';

export interface StampWrites {
  /** The row and its history; with `firstCall`, that call recorded in flight when nothing pins the row (loadStampRows). */
  load(outboxId: string, firstCall?: FirstCall): Promise<StampRow | undefined>;
  /** Whether the call may be made (false once a correction holds the row). */
  recordInFlight(call: PacCallInFlight): Promise<boolean>;
  persist(stamp: StampToPersist): Promise<PersistedStamp>;
}

/** Default: up to 64 jobs' statements in one; two statements of a kind at once (the pool has more). */
export const STAMP_WRITES_DEFAULTS: GroupCommitOptions = { maxBatch: 64, maxInFlight: 2 };

/** On the lean runner (node-postgres, Prisma's pool): these are the stamper's per-payment statements. */
export function stampWrites(prisma: PrismaClient, options: GroupCommitOptions = STAMP_WRITES_DEFAULTS): StampWrites {
  const lean = leanDb(prisma);
  const load = GroupCommit.statement(lean, loadStampRows, options);
  const inFlight = GroupCommit.statement(lean, recordPacCallsInFlight, options);
  const persist = GroupCommit.statement(lean, persistStamps, options);
  return {
    load: (outboxId, firstCall) => load.submit({ outboxId, firstCall }),
    recordInFlight: (call) => inFlight.submit(call),
    persist: (stamp) => persist.submit(stamp),
  };
}

/** Every organization's stamp writes, batched together: `for(id)` is one organization's share. */
export interface StampWritesAcross {
  for(organizationId: string): StampWrites;
}

/**
 * Platform mode's stamp writes: the jobs of every organization go into the same batches, each batch
 * one statement on a session naming exactly the organizations of its items (`across.run`), each
 * item matched to its own organization's rows (@timbra/db outbox/stamping.ts).
 */
export function stampWritesAcross(
  across: SeveralOrganizations,
  options: GroupCommitOptions = STAMP_WRITES_DEFAULTS,
): StampWritesAcross {
  // A group commit whose batches run on a session naming their items' organizations.
  const batched = <I, O>(organizationOf: (item: I) => string, record: (db: RawDb, items: I[]) => Promise<O[]>) =>
    GroupCommit.statement(
      across,
      (a, items: I[]) => a.run(items.map(organizationOf), (db) => record(db, items)),
      options,
    );
  const load = batched(
    (k: { outboxId: string; organizationId: string; firstCall: FirstCall | undefined }) => k.organizationId,
    loadStampRows,
  );
  const inFlight = batched(
    (c: PacCallInFlight & { organizationId: string }) => c.organizationId,
    recordPacCallsInFlight,
  );
  const persist = batched(
    (s: StampToPersist & { row: { organizationId: string } }) => s.row.organizationId,
    persistStamps,
  );
  return {
    for: (organizationId) => ({
      load: (outboxId, firstCall) => load.submit({ outboxId, organizationId, firstCall }),
      recordInFlight: (call) => inFlight.submit({ ...call, organizationId }),
      persist: (stamp) => persist.submit({ ...stamp, row: { ...stamp.row, organizationId } }),
    }),
  };
}
