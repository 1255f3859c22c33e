import type { PrismaClient } from './generated/client.ts';
import { retryOnConflict } from './database-trouble.ts';
import { leanDb } from './lean.ts';
import type { SeveralOrganizations } from './organizations/clients.ts';
import type { RawDb } from './sql.ts';

export interface GroupCommitOptions {
  /** Most units of work in one transaction. */
  maxBatch: number;
  /** Transactions open at once; more work waits and joins the next one. */
  maxInFlight: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (reason: unknown) => void;
}

/**
 * Group commit: items submitted while a transaction is open wait for it, then are recorded together
 * — set-wise, by `record` — in the next one, which commits once. The API records webhook deliveries
 * this way (an interactive transaction of several statements); the stamper its PAC calls and stamps
 * (`GroupCommit.statement`: `record` writes a batch in one statement, its own transaction, so a
 * batch of one costs no BEGIN/COMMIT round trips). Each item still commits atomically
 * with its own rows, and its caller is answered only after that commit; what items share is the
 * round trips, the BEGIN/COMMIT and its WAL flush, and — on one serie — the counter row lock, which
 * otherwise every payment takes and holds through its own commit. Nothing waits on a timer: with
 * no transaction open, an item starts at once, so a quiet API records batches of one.
 *
 * If a batch fails, its transaction rolled back whole; each item is then recorded alone, so one bad
 * item fails only its own caller. `record` must therefore be safe to run again after a rollback
 * (database work only).
 */
export class GroupCommit<I, O> {
  private readonly queue: Pending<I, O>[] = [];
  private inFlight = 0;

  private constructor(
    /** Records a batch, atomically; one result per item, in order. */
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions,
  ) {}

  /**
   * Batches that `record` writes inside one transaction (any number of raw statements), on the lean
   * runner sharing `prisma`'s connections (lean.ts: its limits are the ones Prisma's interactive
   * transactions had here).
   */
  static transaction<I, O>(
    prisma: PrismaClient,
    record: (tx: RawDb, items: I[]) => Promise<O[]>,
    options: GroupCommitOptions,
  ): GroupCommit<I, O> {
    const db = leanDb(prisma);
    // A deadlock rolled the batch back whole: it is run again before its items are tried alone.
    return new GroupCommit((items) => retryOnConflict(() => db.transaction((tx) => record(tx, items))), options);
  }

  /**
   * `transaction`'s batches for several organizations at once: each batch's transaction on a session
   * naming exactly its items' organizations (`OrganizationClients.across()`); `record` must write
   * each item's rows in its own organization (a row naming none is refused when the batch names
   * several).
   */
  static transactionAcross<I, O>(
    across: SeveralOrganizations,
    organizationOf: (item: I) => string,
    record: (tx: RawDb, items: I[]) => Promise<O[]>,
    options: GroupCommitOptions,
  ): GroupCommit<I, O> {
    return new GroupCommit(
      (items) =>
        across.run(items.map(organizationOf), (db) => retryOnConflict(() => db.transaction((tx) => record(tx, items)))),
      options,
    );
  }

  /** Batches that `record` writes in one statement: atomic by itself, and a batch of one costs no BEGIN/COMMIT. */
  static statement<I, O, D>(
    db: D,
    record: (db: D, items: I[]) => Promise<O[]>,
    options: GroupCommitOptions,
  ): GroupCommit<I, O> {
    return new GroupCommit((items) => record(db, items), options);
  }

  /** Records `item` in a (possibly shared) transaction; resolves after that transaction commits. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.commit(batch).finally(() => {
        this.inFlight--;
        this.drain();
      });
    }
  }

  private async commit(batch: Pending<I, O>[]): Promise<void> {
    let results: O[];
    try {
      results = await this.run(batch.map((p) => p.item));
    } catch (error) {
      if (batch.length === 1) {
        batch[0]!.reject(error);
        return;
      }
      // Rolled back whole: record every item in its own transaction, so only the bad one fails.
      await Promise.all(batch.map((pending) => this.commit([pending])));
      return;
    }
    batch.forEach((pending, i) => pending.resolve(results[i]!));
  }
}
