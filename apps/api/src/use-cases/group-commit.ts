import type { Prisma, PrismaClient } from '@timbra/db';

type Tx = Prisma.TransactionClient;

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

/** Interactive-transaction limits: waiting for a connection, and the whole transaction. */
const TX_OPTIONS = { maxWait: 10_000, timeout: 20_000 } as const;

/**
 * Group commit: items submitted while a transaction is open wait for it, then are recorded together
 * — set-wise, by `record` — in the next one, which commits once. Each item still commits atomically
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

  constructor(
    private readonly prisma: PrismaClient,
    /** Records a batch inside `tx`; one result per item, in order. */
    private readonly record: (tx: Tx, items: I[]) => Promise<O[]>,
    private readonly options: GroupCommitOptions,
  ) {}

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
      results = await this.prisma.$transaction(
        (tx) =>
          this.record(
            tx,
            batch.map((p) => p.item),
          ),
        TX_OPTIONS,
      );
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
