import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { apiSettings, configurationDoc, SECRET_SETTINGS, workerSettings } from '../src/index.ts';
import { API_SECTIONS } from '../src/api.ts';
import { SHARED_SECTIONS } from '../src/shared.ts';
import { WORKER_SECTIONS } from '../src/worker.ts';
import type { SettingsSection } from '../src/define.ts';

const names = (sections: readonly SettingsSection[]) =>
  sections.flatMap((s) => s.entries.flatMap((e) => Object.keys(e.settings)));

describe('the settings schema', () => {
  it('writes docs/configuration.md: the committed file is what `npm run docs:config` writes', () => {
    const committed = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    // On a difference: run `npm run docs:config` and commit the file.
    expect(committed).toBe(configurationDoc());
  });

  it('defines each setting once: no section of an app shadows another', () => {
    const api = names([...SHARED_SECTIONS, ...API_SECTIONS]);
    const worker = names([...SHARED_SECTIONS, ...WORKER_SECTIONS]);
    expect(api.length).toBe(new Set(api).size);
    expect(worker.length).toBe(new Set(worker).size);
    expect(Object.keys(apiSettings.shape).sort()).toEqual([...api].sort());
    expect(Object.keys(workerSettings.shape).sort()).toEqual([...worker].sort());
  });

  it('reads every secret an app knows from its file, and knows every setting read from a file', () => {
    const all = new Set([...Object.keys(apiSettings.shape), ...Object.keys(workerSettings.shape)]);
    // The sandboxes' admin token is the sandboxes' own setting (apps/pac-sandbox).
    expect(SECRET_SETTINGS.filter((n) => !all.has(n) && n !== 'SANDBOX_ADMIN_TOKEN')).toEqual([]);
  });

  it('documents every setting with a sentence', () => {
    const entries = [...SHARED_SECTIONS, ...API_SECTIONS, ...WORKER_SECTIONS].flatMap((s) => s.entries);
    expect(entries.filter((e) => e.doc.trim().length < 10).map((e) => Object.keys(e.settings))).toEqual([]);
  });
});
