import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { PacInstance } from './pac-instance.ts';
import type { SatRegistry, StampRecord } from './registry.ts';

interface StateFile {
  /** Since when the saved ledger knows every stamp (absent in files older than it: their first stamp). */
  coversSince?: string;
  stamps: StampRecord[];
  customids: Record<string, [string, string][]>;
}

/** Loads a saved ledger into the registry and the instances' memories (missing file: nothing). */
export function loadState(file: string, registry: SatRegistry, instances: ReadonlyMap<string, PacInstance>): number {
  if (!existsSync(file)) return 0;
  const state = JSON.parse(readFileSync(file, 'utf8')) as StateFile;
  registry.coversSince = state.coversSince ?? state.stamps[0]?.stampedAt ?? registry.coversSince;
  for (const record of state.stamps) {
    registry.add(record);
    instances.get(record.instance)?.memory.byCadena.set(record.cadenaHash, record);
  }
  for (const [name, pairs] of Object.entries(state.customids)) {
    const memory = instances.get(name)?.memory;
    for (const [customid, hash] of pairs) memory?.customids.set(customid, hash);
  }
  return state.stamps.length;
}

/**
 * Saves state at most every `everyMs` (a write per stamp would dominate a benchmark); writes a
 * temporary file and renames it, so a crash never leaves half a ledger.
 */
export function stateSaver(
  file: string,
  registry: SatRegistry,
  instances: ReadonlyMap<string, PacInstance>,
  everyMs = 200,
) {
  let timer: NodeJS.Timeout | undefined;
  const save = () => {
    timer = undefined;
    const state: StateFile = {
      coversSince: registry.coversSince,
      stamps: registry.stamps,
      customids: Object.fromEntries([...instances.values()].map((i) => [i.name, [...i.memory.customids.entries()]])),
    };
    writeFileSync(`${file}.tmp`, JSON.stringify(state));
    renameSync(`${file}.tmp`, file);
  };
  return {
    schedule: () => {
      timer ??= setTimeout(save, everyMs);
    },
    flush: () => {
      if (timer) clearTimeout(timer);
      save();
    },
  };
}
