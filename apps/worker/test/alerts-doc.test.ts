import { describe, expect, it } from '@jest/globals';
import type { PrismaClient } from '@timbra/db';
import { alertDrift, alertRules, exportedSeries } from '@timbra/test-support';
import { createWorkerMetrics } from '../src/operations/metrics.ts';
import { globalCloserMetrics } from '../src/globals/close-globals.ts';
import { satRecordMetrics } from '../src/operations/sat-schedule.ts';

/** The worker's registry as main.ts makes it: its metrics, the close timer's and the SAT schedule's. */
const registry = () => {
  const { registry } = createWorkerMetrics({
    prisma: {} as PrismaClient,
    chain: { breakers: new Map() } as unknown as Parameters<typeof createWorkerMetrics>[0]['chain'],
  });
  globalCloserMetrics(registry);
  satRecordMetrics(registry);
  return registry;
};

describe('docs/alerts.md, the worker’s rules', () => {
  it('has rules labelled component: worker', () => {
    expect(alertRules().filter((r) => r.labels?.component === 'worker').length).toBeGreaterThanOrEqual(6);
  });

  it('names only metrics (and labels) the worker exports in the rules labelled component: worker', () => {
    expect(alertDrift('worker', exportedSeries(registry()))).toEqual([]);
  });
});
