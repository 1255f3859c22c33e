import { z } from 'zod';

type Shape = Record<string, z.ZodType>;

/**
 * One line of docs/configuration.md: one setting, or a few that go together (a secret and its URL,
 * a retry's first delay and its cap), and what they mean. `shown` replaces the defaults the schema
 * gives when the plain values say too little (a default that depends on the profile, say).
 */
export interface SettingsEntry<S extends Shape = Shape> {
  settings: S;
  doc: string;
  shown?: string;
}

/** A titled group of entries: a section of docs/configuration.md, and a part an app picks whole. */
export interface SettingsSection<S extends Shape = Shape> {
  title: string;
  /** A paragraph before the section's list: what holds for all of it. */
  about?: string;
  entries: readonly SettingsEntry<S>[];
}

/** One entry (its settings keep their types, so the apps' parsed settings are typed). */
export function entry<S extends Shape>(settings: S, doc: string, shown?: string): SettingsEntry<S> {
  return shown === undefined ? { settings, doc } : { settings, doc, shown };
}

type Merge<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** A section; its `shape` is every entry's settings in one zod shape, typed. */
export function section<E extends readonly SettingsEntry[]>(
  title: string,
  entries: E,
  about?: string,
): SettingsSection & { shape: Merge<E[number]['settings']> } {
  const shape: Shape = {};
  for (const e of entries)
    for (const [name, schema] of Object.entries(e.settings)) {
      if (name in shape) throw new Error(`setting ${name} is defined twice in ${title}`);
      shape[name] = schema;
    }
  return { title, entries, ...(about === undefined ? {} : { about }), shape: shape as Merge<E[number]['settings']> };
}

/** A `true` / `false` setting. */
export const bool = z.enum(['true', 'false']).transform((v) => v === 'true');
