import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { AcrossOrganizations, type OrganizationParts } from '../src/organizations/across.ts';

// The worker's parts for another organization: built on first use, kept a while, built again after
// (a CSD renewed since reaches the worker as it reaches the API), and a failed build tried again.

const parts = (n: number): OrganizationParts & { n: number } => ({
  n,
  relay: { drainOnce: () => Promise.resolve(0), capped: false },
  sweeper: { sweepOnce: () => Promise.resolve(0) },
});

function across(refreshMs: number, build: (id: string) => Promise<OrganizationParts & { n: number }>) {
  return new AcrossOrganizations({
    home: { id: 'home', parts: parts(0) },
    build,
    ids: () => Promise.resolve(['home', 'other']),
    pending: () => Promise.resolve([]),
    batchSize: 10,
    refreshMs,
    logger: pino({ level: 'silent' }),
  });
}

describe("another organization's parts", () => {
  it('are built once, kept for refreshMs, then built again', async () => {
    let builds = 0;
    const a = across(60, () => Promise.resolve(parts(++builds)));
    expect((await a.partsOf('other')).n).toBe(1);
    expect((await a.partsOf('other')).n).toBe(1);
    expect((await a.partsOf(undefined)).n).toBe(0);
    await new Promise((r) => setTimeout(r, 80));
    expect((await a.partsOf('other')).n).toBe(2);
    expect(builds).toBe(2);
  });

  it('are built again at the next use after a failed build', async () => {
    let builds = 0;
    const a = across(60_000, () =>
      ++builds === 1 ? Promise.reject(new Error('no CSD yet')) : Promise.resolve(parts(builds)),
    );
    await expect(a.partsOf('other')).rejects.toThrow('no CSD yet');
    expect((await a.partsOf('other')).n).toBe(2);
  });
});
