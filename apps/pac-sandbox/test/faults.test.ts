import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { percentile } from '@timbra/test-support';
import { faultsSchema, latencyFor, meanLatency, seededRandom } from '../src/faults.ts';
import { ADMIN_TOKEN, startSandbox, type RunningSandbox } from './helpers.ts';

describe('latency faults', () => {
  it('draws a { p50, p99 } latency from a log-normal distribution with those percentiles', () => {
    const faults = faultsSchema.parse({ latencyMs: { p50: 400, p99: 3000 } });
    const random = seededRandom(11);
    const draws = Array.from({ length: 50_000 }, () => latencyFor(faults, random)).sort((a, b) => a - b);
    expect(percentile(draws, 50)).toBeGreaterThan(380);
    expect(percentile(draws, 50)).toBeLessThan(420);
    expect(percentile(draws, 99)).toBeGreaterThan(2700);
    expect(percentile(draws, 99)).toBeLessThan(3300);
    expect(draws[0]).toBeGreaterThanOrEqual(0);
    const mean = draws.reduce((sum, d) => sum + d, 0) / draws.length;
    expect(meanLatency(faults.latencyMs)).toBeCloseTo(582, 0);
    expect(Math.abs(mean - meanLatency(faults.latencyMs)) / meanLatency(faults.latencyMs)).toBeLessThan(0.03);
  });

  it('gives the mean of a fixed latency and of a range', () => {
    expect(meanLatency(50)).toBe(50);
    expect(meanLatency([10, 30])).toBe(20);
    const random = seededRandom(3);
    const range = faultsSchema.parse({ latencyMs: [10, 30] });
    for (let i = 0; i < 1000; i++) {
      const d = latencyFor(range, random);
      expect(d).toBeGreaterThanOrEqual(10);
      expect(d).toBeLessThanOrEqual(30);
    }
  });

  it('reproduces a run: the same seed draws the same latencies', () => {
    const faults = faultsSchema.parse({ latencyMs: { p50: 400, p99: 3000 } });
    const draw = (seed: number) => {
      const random = seededRandom(seed);
      return Array.from({ length: 20 }, () => latencyFor(faults, random));
    };
    expect(draw(5)).toEqual(draw(5));
    expect(draw(5)).not.toEqual(draw(6));
  });
});

describe('the admin API with a latency distribution', () => {
  let run: RunningSandbox;
  beforeAll(async () => {
    run = await startSandbox();
  });
  afterAll(() => run.stop());

  const post = (body: unknown) =>
    got.post(`${run.adminUrl}/__admin/faults`, {
      json: body,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      throwHttpErrors: false,
      responseType: 'json',
    });

  it('takes { p50, p99 } and refuses a p99 below the p50 or unknown keys, with 422', async () => {
    const set = await post({ instance: 'primary', latencyMs: { p50: 400, p99: 3000 } });
    expect(set.statusCode).toBe(200);
    // The mean it draws from, for a benchmark's concurrency ÷ latency bound.
    expect((set.body as { meanLatencyMs: number }).meanLatencyMs).toBeCloseTo(582, 0);
    expect(run.sandbox.instances.get('primary')!.faults.latencyMs).toEqual({ p50: 400, p99: 3000 });
    const below = await post({ instance: 'primary', latencyMs: { p50: 400, p99: 100 } });
    expect(below.statusCode).toBe(422);
    expect(JSON.stringify(below.body)).toContain('p99 must be at least p50');
    expect((await post({ instance: 'primary', latencyMs: { p50: 400, p99: 3000, p90: 1 } })).statusCode).toBe(422);
    expect((await post({ instance: 'primary', latencyMs: { p50: 0, p99: 3000 } })).statusCode).toBe(422);
    expect((await post({ instance: 'primary', reset: true })).statusCode).toBe(200);
  });
});
