/**
 * The stamper's PAC calls in flight (WORKER_CONCURRENCY), shared fairly: a free slot goes to the
 * next key in turn (each organization's waiting rows, in the order they asked), so one organization's
 * `stamp-group` job of a hundred rows does not hold every slot while another's single row waits.
 * A slot freed is handed straight to the next waiter: none can barge in ahead of those waiting.
 */
export class FairSlots {
  private busy = 0;
  /** Each key's waiters; a Map keeps insertion order, which is the turn. */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`capacity must be a positive integer: ${capacity}`);
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.busy;
  }

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    if (this.busy < this.capacity && this.waiting.size === 0) this.busy++;
    else
      await new Promise<void>((resolve) => {
        const mine = this.waiting.get(key);
        if (mine) mine.push(resolve);
        else this.waiting.set(key, [resolve]);
      });
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private release(): void {
    const next = this.waiting.entries().next();
    if (next.done) {
      this.busy--;
      return;
    }
    const [key, waiters] = next.value;
    const wake = waiters.shift()!;
    // To the back of the turn; gone when it has no one left waiting.
    this.waiting.delete(key);
    if (waiters.length > 0) this.waiting.set(key, waiters);
    wake();
  }
}
