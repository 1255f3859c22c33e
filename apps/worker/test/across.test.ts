import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { AcrossOrganizations, BuildFailedRecently, type OrganizationParts } from '../src/organizations/across.ts';
import { DeliveriesAcross } from '../src/organizations/deliveries-across.ts';

// The worker's parts and dispatchers for another organization: built on first use, kept a while,
// built again after (a CSD, sender or logo changed since reaches the worker as it reaches the API),
// and a failed build tried again.

const parts = (n: number): OrganizationParts & { n: number } => ({
  n,
  relay: { drainOnce: () => Promise.resolve(0), capped: false },
  sweeper: { sweepOnce: () => Promise.resolve(0) },
});

function across(
  refreshMs: number,
  build: (id: string) => Promise<OrganizationParts & { n: number }>,
  retryFailedMs?: number,
) {
  return new AcrossOrganizations({
    ...(retryFailedMs !== undefined ? { retryFailedMs } : {}),
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

  it('are built again after a failed build, retryFailedMs later, its work waiting unlogged till then', async () => {
    let builds = 0;
    const a = across(
      60_000,
      () => (++builds === 1 ? Promise.reject(new Error('no CSD yet')) : Promise.resolve(parts(builds))),
      60,
    );
    await expect(a.partsOf('other')).rejects.toThrow('no CSD yet');
    await expect(a.partsOf('other')).rejects.toBeInstanceOf(BuildFailedRecently);
    expect(builds).toBe(1);
    await new Promise((r) => setTimeout(r, 80));
    expect((await a.partsOf('other')).n).toBe(2);
  });

  it("are built again at once for a job (its attempts are the queue's to count)", async () => {
    let builds = 0;
    const a = across(60_000, () =>
      ++builds === 1 ? Promise.reject(new Error('no CSD yet')) : Promise.resolve(parts(builds)),
    );
    await expect(a.partsOf('other', 'build')).rejects.toThrow('no CSD yet');
    expect((await a.partsOf('other', 'build')).n).toBe(2);
  });
});

describe('the relay across organizations', () => {
  it('drains the organizations a NOTIFY named without asking; a full share stays known until a round of all', async () => {
    const drained: string[] = [];
    let asked = 0;
    let full = new Set(['home']);
    const relayOf = (id: string) => ({
      drainOnce: () => {
        drained.push(id);
        return Promise.resolve(1);
      },
      get capped() {
        return full.has(id);
      },
    });
    const a = new AcrossOrganizations({
      home: { id: 'home', parts: { relay: relayOf('home'), sweeper: { sweepOnce: () => Promise.resolve(0) } } },
      build: (id) => Promise.resolve({ relay: relayOf(id), sweeper: { sweepOnce: () => Promise.resolve(0) } }),
      ids: () => Promise.resolve(['home', 'other']),
      pending: () => {
        asked++;
        return Promise.resolve(['home', 'other']);
      },
      batchSize: 10,
      logger: pino({ level: 'silent' }),
    });
    await a.drainAll();
    expect([asked, drained, a.capped]).toEqual([1, ['home', 'other'], true]);
    // The home organization's share frees up, but a round of the other alone cannot know it.
    full = new Set();
    await a.drainAll(new Set(['other']));
    expect([asked, drained.slice(2), a.capped]).toEqual([1, ['other'], true]);
    await a.drainAll();
    expect([asked, a.capped]).toEqual([2, false]);
  });
});

describe("another organization's dispatcher (its sender and logo)", () => {
  it('is built again after refreshMs, the one it replaces let go once the new one is built', async () => {
    const closed: number[] = [];
    let builds = 0;
    const deliveries = new DeliveriesAcross({
      due: () => Promise.resolve(['other']),
      build: () => {
        const n = ++builds;
        return { drainAll: () => Promise.resolve(n), close: () => closed.push(n) };
      },
      refreshMs: 60,
      logger: pino({ level: 'silent' }),
    });
    expect(await deliveries.drainAll()).toBe(1);
    expect(await deliveries.drainAll()).toBe(1);
    await new Promise((r) => setTimeout(r, 80));
    expect(await deliveries.drainAll()).toBe(2);
    await new Promise((r) => setImmediate(r));
    expect(closed).toEqual([1]);
    await deliveries.close();
    expect(closed).toEqual([1, 2]);
  });
});
