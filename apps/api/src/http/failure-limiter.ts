/**
 * Limits on failed authentication (per API instance, fixed one-minute windows):
 *
 * - an address with more than `perAddress` failures a minute is refused (429) on every /v1 request
 *   until the window ends — a key guessed right from it is refused too, so guessing does not pay;
 * - a key prefix (the first 8 characters presented) with more than `perPrefix` failures a minute gets
 *   429 instead of 401 on further failures — enumeration around a known prefix is slowed, while the
 *   key's owner (who presents the whole key) is never locked out;
 * - a webhook's bad signatures count per address and, over the limit, are answered 429 — a request
 *   correctly signed is never limited by them, so a flood of forgeries cannot starve Stripe or
 *   Mercado Pago.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly limits: { perAddress: number; perPrefix: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts a failure for this address (and key prefix). @returns true when over a limit: answer 429. */
  fail(address: string, prefix?: string): boolean {
    const overAddress = this.hit(`a:${address}`) > this.limits.perAddress;
    const overPrefix = prefix !== undefined && this.hit(`p:${prefix}`) > this.limits.perPrefix;
    return overAddress || overPrefix;
  }

  /** Whether this address is over its failure limit (every /v1 request from it is refused). */
  blocked(address: string): boolean {
    return this.count(`a:${address}`) > this.limits.perAddress;
  }

  private count(key: string): number {
    const w = this.windows.get(key);
    return w && w.resetAt > this.now() ? w.count : 0;
  }

  private hit(key: string): number {
    const now = this.now();
    let w = this.windows.get(key);
    if (!w || w.resetAt <= now) {
      if (this.windows.size > 50_000) this.sweep(now);
      w = { count: 0, resetAt: now + 60_000 };
      this.windows.set(key, w);
    }
    return ++w.count;
  }

  private sweep(now: number): void {
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }
}
