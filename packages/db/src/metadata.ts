/**
 * Metadata: the merchant's own strings on payments, invoices and customers (an order number, a store,
 * a customer id of theirs). Stripe's limits and conventions, so a map copied from a PaymentIntent
 * always fits: at most 50 keys, a key 1–40 characters without square brackets (a list filters with
 * `metadata[key]=value`), a value up to 500 characters; a change sets each key it names, and a key
 * set to "" is removed. Never part of a CFDI or its PDF. This module owns the rules; the migration
 * `20270104000000_metadata` holds the shape (an object of strings) and the filter's indexes.
 */
import { z } from 'zod';
import { Prisma } from './generated/client.ts';
import { queryRows, type RawDb } from './sql.ts';
import { isStorableText } from './text.ts';

export const METADATA_LIMITS = { keys: 50, keyLength: 40, valueLength: 500 } as const;

/** A stored map: every value a non-empty string. */
export type Metadata = Record<string, string>;

/** The tables that carry metadata. */
export type MetadataTable = 'payments' | 'invoices' | 'customers';

export interface MetadataProblem {
  path: string;
  message: string;
}

/** What is wrong with one key (none: an empty list). */
export function metadataKeyProblems(key: string, path: string): MetadataProblem[] {
  const problems: MetadataProblem[] = [];
  if (key.length < 1 || key.length > METADATA_LIMITS.keyLength)
    problems.push({ path, message: `a key of 1–${METADATA_LIMITS.keyLength} characters` });
  if (/[[\]]/.test(key)) problems.push({ path, message: 'a key without square brackets' });
  if (!isStorableText(key)) problems.push({ path, message: 'a key without NUL characters or lone surrogates' });
  return problems;
}

/** What is wrong with one value; "" is allowed only where it removes a key (`allowEmpty`). */
export function metadataValueProblems(value: unknown, path: string, allowEmpty: boolean): MetadataProblem[] {
  if (typeof value !== 'string') return [{ path, message: 'a string' }];
  if (value.length > METADATA_LIMITS.valueLength)
    return [{ path, message: `at most ${METADATA_LIMITS.valueLength} characters` }];
  if (value === '' && !allowEmpty) return [{ path, message: 'a non-empty string' }];
  if (!isStorableText(value)) return [{ path, message: 'no NUL character or lone surrogate' }];
  return [];
}

/**
 * What is wrong with a map given to a request: an object of at most 50 keys, each key and value
 * within the limits. A value "" removes its key (on a new object it is simply not stored).
 */
export function metadataProblems(value: unknown, path = 'metadata'): MetadataProblem[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ path, message: 'an object of strings' }];
  const entries = Object.entries(value);
  const problems = entries.flatMap(([key, v]) => [
    ...metadataKeyProblems(key, `${path}.${key}`),
    ...metadataValueProblems(v, `${path}.${key}`, true),
  ]);
  if (entries.filter(([, v]) => v !== '').length > METADATA_LIMITS.keys)
    problems.push({ path, message: `at most ${METADATA_LIMITS.keys} keys` });
  return problems;
}

/** A checked map as stored on a new row: the keys set to "" left out. */
export function newMetadata(given: Metadata | undefined): Metadata {
  return Object.fromEntries(Object.entries(given ?? {}).filter(([, v]) => v !== ''));
}

/**
 * A provider's metadata (a Stripe PaymentIntent's, a Mercado Pago payment's) as a payment keeps it:
 * strings, numbers and booleans as text; keys or values over the limits, objects and nulls left out;
 * the first 50 keys. Stripe's own limits are these, so a Stripe map is kept whole.
 */
export function providerMetadata(raw: Record<string, unknown> | null | undefined): Metadata {
  const kept: Metadata = {};
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (Object.keys(kept).length >= METADATA_LIMITS.keys) break;
    const text = typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
    if (typeof text !== 'string' || text === '') continue;
    if (metadataKeyProblems(key, key).length > 0 || metadataValueProblems(text, key, false).length > 0) continue;
    kept[key] = text;
  }
  return kept;
}

const metadataRow = z.object({ metadata: z.record(z.string(), z.string()) });
const idRow = z.object({ id: z.string() });

/**
 * Applies a change to a row's metadata in one statement (keys set, keys given "" removed), refused
 * when the result would hold more than 50 keys. @returns the map as stored, or why nothing changed.
 */
export async function changeMetadata(
  db: RawDb,
  table: MetadataTable,
  id: string,
  change: Metadata,
): Promise<{ metadata: Metadata } | 'not_found' | 'too_many_keys'> {
  const set = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== ''));
  const removed = Object.keys(change).filter((k) => change[k] === '');
  const touched = table === 'payments' ? Prisma.empty : Prisma.sql`, updated_at = now()`;
  const [row] = await queryRows(
    db,
    metadataRow,
    Prisma.sql`
      UPDATE ${Prisma.raw(table)}
         SET metadata = (metadata || ${JSON.stringify(set)}::jsonb) - ${removed}::text[] ${touched}
       WHERE id = ${id}::uuid
         AND (SELECT count(*) FROM jsonb_object_keys((metadata || ${JSON.stringify(set)}::jsonb) - ${removed}::text[])) <= ${METADATA_LIMITS.keys}
      RETURNING metadata`,
  );
  if (row) return row;
  const exists = await queryRows(db, idRow, Prisma.sql`SELECT id FROM ${Prisma.raw(table)} WHERE id = ${id}::uuid`);
  return exists.length > 0 ? 'too_many_keys' : 'not_found';
}

/** Rows a filter's indexed lookup may hand to a list by id; past it the list filters row by row. */
const NARROWED_IDS = 1_000;

/**
 * A list's `where` for a metadata filter (every key equal to its value). The rows it matches are
 * looked up first in the table's partial GIN index (`metadata @> …`): when there are at most 1,000,
 * the list reads only those ids; otherwise the list checks each row, as it would anyway.
 */
export async function metadataWhere(
  db: RawDb,
  table: MetadataTable,
  filter: Metadata | undefined,
): Promise<{ AND?: { metadata: { path: string[]; equals: string } }[]; id?: { in: string[] } }> {
  const entries = Object.entries(filter ?? {});
  if (entries.length === 0) return {};
  const each = { AND: entries.map(([key, value]) => ({ metadata: { path: [key], equals: value } })) };
  const ids = await queryRows(
    db,
    idRow,
    Prisma.sql`SELECT id FROM ${Prisma.raw(table)}
                WHERE metadata @> ${JSON.stringify(Object.fromEntries(entries))}::jsonb AND metadata <> '{}'
                LIMIT ${NARROWED_IDS + 1}`,
  );
  return ids.length <= NARROWED_IDS ? { ...each, id: { in: ids.map((r) => r.id) } } : each;
}
