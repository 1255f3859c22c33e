/**
 * docs/configuration.md, written from the sections (`npm run docs:config`); a test fails when the
 * file and the schemas differ.
 */
import type { z } from 'zod';
import type { SettingsEntry, SettingsSection } from './define.ts';
import { API_SECTIONS } from './api.ts';
import { SECRET_SETTINGS } from './secret-files.ts';
import { SHARED_SECTIONS } from './shared.ts';
import { WORKER_SECTIONS } from './worker.ts';

const secrets = new Set<string>(SECRET_SETTINGS);

/** What a setting is when unset: its default, `—` (optional), or `required`. */
function defaultOf(schema: z.ZodType): string {
  const unset = schema.safeParse(undefined);
  if (!unset.success) return 'required';
  if (unset.data === undefined) return '—';
  // Settings parse to strings, numbers, booleans, or lists of them (address ranges).
  const data = unset.data as string | number | boolean | readonly unknown[];
  const value = Array.isArray(data) ? data.join(',') : `${data as string | number | boolean}`;
  return value === '' ? 'empty' : `\`${value}\``;
}

function line(e: SettingsEntry): string {
  const names = Object.keys(e.settings);
  const defaults = Object.values(e.settings).map(defaultOf);
  const shown = e.shown ?? (defaults.every((d) => d === '—') ? undefined : defaults.join(', '));
  const secret = names.filter((n) => secrets.has(n));
  const note =
    secret.length > 0
      ? ` — a secret: never logged; may come from a file (${secret.map((n) => `\`${n}_FILE\``).join(', ')})`
      : '';
  return `- ${names.map((n) => `\`${n}\``).join(', ')}${shown ? ` (${shown})` : ''} — ${e.doc}${note}`;
}

function sectionText(s: SettingsSection): string {
  return [`### ${s.title}`, '', ...(s.about ? [s.about, ''] : []), ...s.entries.map(line), ''].join('\n');
}

/** The whole of docs/configuration.md. */
export function configurationDoc(): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated from packages/settings by `npm run docs:config`; edit the settings there. -->',
    '',
    'Both apps read their settings from the environment, through one schema in `packages/settings`: the',
    "sections both read are listed first, then each app's own. `npm run ops` reads the worker's (Postgres,",
    'Redis, retention). A bad value stops the app at start-up with a line naming the setting. Defaults are',
    'in parentheses (`—`: unset by default; `required`: in the production profile).',
    '',
    `A secret may come from a file instead: \`<NAME>_FILE\` names it (${SECRET_SETTINGS.map((n) => `\`${n}\``).join(', ')}; see [deploying.md](deploying.md)).`,
    '',
    '## Both apps',
    '',
    ...SHARED_SECTIONS.map(sectionText),
    '## API',
    '',
    ...API_SECTIONS.map(sectionText),
    '## Worker',
    '',
    ...WORKER_SECTIONS.map(sectionText),
  ].join('\n');
}
