import { describe, expect, it } from '@jest/globals';
import type { MinimalJob } from 'bullmq';
import { backoffDelay, retryJobOptions, stampBackoff } from '../src/stamping/jobs.ts';

const policy = { attempts: 6, baseDelayMs: 1_000, maxDelayMs: 10_000 };
/** Jitter at its middle: the delay is the exponential figure itself. */
const middle = () => 0.5;
const jobWith = (data: unknown) => ({ data }) as unknown as MinimalJob;

describe('the stamp jobs’ backoff', () => {
  it('doubles from the base delay and stops at the cap, within ±50% jitter', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(policy, n, middle))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
    expect(backoffDelay(policy, 2, () => 0)).toBe(1_000);
    expect(backoffDelay(policy, 2, () => 0.999_999)).toBe(3_000);
  });

  it('a row that carries on from its group keeps doubling where it left off', () => {
    const strategy = stampBackoff(policy, middle);
    // The retry job's own first failure is the row's second attempt.
    expect(strategy(1, 'timbra', undefined, jobWith({ attemptsBefore: 1 }))).toBe(2_000);
    expect(strategy(2, 'timbra', undefined, jobWith({ attemptsBefore: 1 }))).toBe(4_000);
    // A job of its own from the start, or a payload that is not a count: as before.
    expect(strategy(1, 'timbra', undefined, jobWith({}))).toBe(1_000);
    expect(strategy(1, 'timbra', undefined, jobWith({ attemptsBefore: 'x' }))).toBe(1_000);
    expect(strategy(1)).toBe(1_000);
  });

  it('the retry job after a group: the attempts left and the first delay', () => {
    const options = retryJobOptions(policy, 'key-1', middle);
    expect(options).toEqual(expect.objectContaining({ jobId: 'key-1', attempts: 5, delay: 1_000 }));
    expect(retryJobOptions({ ...policy, attempts: 1 }, 'key-1', middle).attempts).toBe(1);
  });
});
