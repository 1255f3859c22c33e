/**
 * The chaos run's wait for the system to finish (scripts/chaos/waiting.ts): done when nothing is left,
 * giving up on work that stopped (nothing went down for `stallMs`, once `minMs` passed) or crawls
 * (4 × `minMs` in all) — never on a backlog still going down inside its time.
 */
import { describe, expect, it } from '@jest/globals';
import { waitWhileMoving, type Left } from '../../../scripts/chaos/waiting.ts';

/** A `left` that answers each value in turn, then the last one for ever; counts the polls. */
function answers(...values: Left[]): { left: () => Promise<Left>; polls: () => number } {
  let n = 0;
  return {
    left: () => Promise.resolve(values[Math.min(n++, values.length - 1)]!),
    polls: () => n,
  };
}

describe('waitWhileMoving', () => {
  it('is done at the first poll that finds nothing left, whatever kinds were there before', async () => {
    const w = answers({ stamp: 3, cancel: 1 }, { stamp: 1, cancel: 0 }, { stamp: 0, cancel: 0 });
    const before = Date.now();
    const waited = await waitWhileMoving(w.left, { minMs: 10_000, stallMs: 5_000, pollMs: 1 });
    expect(waited.gaveUp).toBeUndefined();
    expect(waited.left).toEqual({});
    expect(waited.doneAt).toBeGreaterThanOrEqual(before);
    expect(w.polls()).toBe(3);
  });

  it('gives up on work that stopped, once minMs passed, saying so and what was left', async () => {
    const w = answers({ stamp: 5 }, { stamp: 4 });
    const start = Date.now();
    const waited = await waitWhileMoving(w.left, { minMs: 200, stallMs: 100, pollMs: 10 });
    expect(waited.doneAt).toBeUndefined();
    expect(waited.left).toEqual({ stamp: 4 });
    expect(waited.gaveUp).toMatch(/^nothing went down for \d+ s$/);
    expect(Date.now() - start).toBeGreaterThanOrEqual(200);
  });

  it('does not give up on a stall shorter than stallMs, even past minMs', async () => {
    // Stuck at 4 for ~150 ms (polls 2–16), past minMs, then done: stallMs outlasts the pause.
    const w = answers({ stamp: 5 }, ...Array<Left>(15).fill({ stamp: 4 }), { stamp: 0 });
    const waited = await waitWhileMoving(w.left, { minMs: 50, stallMs: 3_000, pollMs: 10 });
    expect(waited.gaveUp).toBeUndefined();
    expect(waited.left).toEqual({});
  });

  it('counts the total: a kind that grows while another drains is still progress only if the sum falls', async () => {
    // The sum stays at 5 (stamp drains into cancel): stalled, though one kind went down.
    const w = answers({ stamp: 5, cancel: 0 }, { stamp: 3, cancel: 2 }, { stamp: 0, cancel: 5 });
    const waited = await waitWhileMoving(w.left, { minMs: 100, stallMs: 50, pollMs: 10 });
    expect(waited.gaveUp).toMatch(/^nothing went down/);
    expect(waited.left).toEqual({ stamp: 0, cancel: 5 });
  });

  it('gives up on work that crawls after 4 × minMs, though it never stalled', async () => {
    let left = 1_000_000;
    const start = Date.now();
    const waited = await waitWhileMoving(() => Promise.resolve({ stamp: --left }), {
      minMs: 50,
      stallMs: 10_000,
      pollMs: 5,
    });
    expect(waited.gaveUp).toMatch(/^still going down after \d+ s$/);
    expect(Date.now() - start).toBeGreaterThanOrEqual(200);
    expect(Date.now() - start).toBeLessThan(1_500); // 4 × minMs, not later (a generous bound for a busy machine)
    expect(waited.left.stamp).toBeGreaterThan(0);
  });
});
