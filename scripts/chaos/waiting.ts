/**
 * Waiting for the system to finish what a chaos run left it, on machines whose speed differs
 * threefold from one day to the next: a fixed deadline failed a slow machine whose backlog was
 * still going down, and would be as long on a fast one whose work had stopped.
 */

/** What is left, by kind (a kind at 0 is done). */
export type Left = Record<string, number>;

export interface Waited {
  /** When nothing was left (undefined: it did not get there). */
  doneAt?: number;
  left: Left;
  /** Why it stopped waiting, when it did not get there. */
  gaveUp?: string;
}

const total = (left: Left) => Object.values(left).reduce((sum, n) => sum + n, 0);

/**
 * Polls `left` until nothing is left. Gives up once at least `minMs` have passed and nothing
 * went down for `stallMs` (work stopped), or after `4 × minMs` in all (work crawling).
 */
export async function waitWhileMoving(
  left: () => Promise<Left>,
  options: { minMs: number; stallMs: number; pollMs?: number },
): Promise<Waited> {
  const start = Date.now();
  let lowest = Number.POSITIVE_INFINITY;
  let movedAt = start;
  for (;;) {
    const current = await left();
    const at = Date.now();
    const n = total(current);
    if (n === 0) return { doneAt: at, left: {} };
    if (n < lowest) {
      lowest = n;
      movedAt = at;
    }
    const waited = at - start;
    if (waited >= options.minMs && at - movedAt >= options.stallMs)
      return { left: current, gaveUp: `nothing went down for ${Math.round((at - movedAt) / 1000)} s` };
    if (waited >= 4 * options.minMs)
      return { left: current, gaveUp: `still going down after ${Math.round(waited / 1000)} s` };
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
  }
}
