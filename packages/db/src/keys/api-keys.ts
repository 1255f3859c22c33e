/**
 * API keys as data: stored hashed (sha256) with a prefix to tell them apart, their scopes, when they
 * were last used and revoked. The one place keys are made, listed, revoked and checked — the API's
 * authentication, its admin routes, the ops CLI and the start-up bootstrap all call here.
 */
import { createHash, randomBytes } from 'node:crypto';
import { CURRENT_API_VERSION, type ApiVersion } from './api-versions.ts';
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { queryRows, type RawDb } from '../sql.ts';

/** What a key may do. */
export const SCOPES = ['read', 'write', 'cancel', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];
/** A key's scopes when none are named: everything but admin. */
export const DEFAULT_SCOPES: readonly Scope[] = ['read', 'write', 'cancel'];

/** What an API key's name may be (it is logged with every request the key makes): 1–64 letters, digits, _ . - */
export const API_KEY_NAME_RULE = '1–64 letters, digits, _ . -';
export function isApiKeyName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,64}$/.test(name);
}

/** sha256 of an API key: what the database stores. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The characters of a key shown in lists and counted by the failure limiter (`tk_live_3f9a`,
 * `tk_test_3f9a`; the first 8 of any other): enough to recognise it, far from enough to use it.
 */
export function keyPrefix(key: string): string {
  return key.slice(0, /^tk_(live|test)_/.test(key) ? 12 : 8);
}

/** Which mode a key works in, as its prefix says: live, test, or neither (a configured key: live). */
export type KeyMode = 'live' | 'test';

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** A key as lists show it: never the key itself. */
export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string | null;
  scopes: string[];
  source: string;
  /** The API version the key is answered in unless a request names another. */
  apiVersion: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const view = (row: ApiKeyView): ApiKeyView => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  scopes: row.scopes,
  source: row.source,
  apiVersion: row.apiVersion,
  createdAt: row.createdAt,
  lastUsedAt: row.lastUsedAt,
  revokedAt: row.revokedAt,
});

export class ApiKeyNameTaken extends Error {
  constructor(readonly keyName: string) {
    super(`an API key named ${keyName} exists`);
  }
}

/**
 * Makes a new key (`tk_live_` or, for a test organization, `tk_test_`, then 32 random bytes,
 * base64url) with `scopes`, answered in `apiVersion` (default: the current one). @returns the key —
 * shown once, never stored — and its row.
 * @throws ApiKeyNameTaken
 */
export async function createApiKey(
  prisma: Pick<PrismaClient, 'apiClient'>,
  name: string,
  scopes: readonly Scope[],
  mode: KeyMode = 'live',
  apiVersion: ApiVersion = CURRENT_API_VERSION,
): Promise<{ key: string; apiKey: ApiKeyView }> {
  const key = `tk_${mode}_${randomBytes(32).toString('base64url')}`;
  if (!isApiKeyName(name)) throw new RangeError(`an API key's name is ${API_KEY_NAME_RULE}`);
  if (await prisma.apiClient.findFirst({ where: { name } })) throw new ApiKeyNameTaken(name);
  const row = await prisma.apiClient.create({
    data: { name, keyHash: hashApiKey(key), prefix: keyPrefix(key), scopes: [...scopes], source: 'ops', apiVersion },
  });
  return { key, apiKey: view(row) };
}

export async function listApiKeys(prisma: Pick<PrismaClient, 'apiClient'>): Promise<ApiKeyView[]> {
  return (await prisma.apiClient.findMany({ orderBy: [{ createdAt: 'asc' }, { name: 'asc' }] })).map(view);
}

/** One key by id, as the list shows it (never its secret); undefined when the organization has none. */
export async function getApiKey(prisma: Pick<PrismaClient, 'apiClient'>, id: string): Promise<ApiKeyView | undefined> {
  const row = await prisma.apiClient.findUnique({ where: { id } });
  return row ? view(row) : undefined;
}

/**
 * Revokes a key by name, id or prefix (at once: authentication reads the row on every request).
 * @returns the key as it is now, or undefined when none matches (or several share the prefix).
 */
export async function revokeApiKey(
  prisma: Pick<PrismaClient, 'apiClient'>,
  which: string,
): Promise<ApiKeyView | undefined> {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(which);
  const matches = await prisma.apiClient.findMany({
    where: { OR: [{ name: which }, { prefix: which }, ...(uuid ? [{ id: which }] : [])] },
  });
  if (matches.length !== 1) return undefined;
  const row = matches[0]!;
  if (row.revokedAt) return view(row);
  return view(await prisma.apiClient.update({ where: { id: row.id }, data: { revokedAt: new Date() } }));
}

/** The key's owner if the key is known and not revoked: its id, name, scopes and API version. */
export async function findApiKey(
  prisma: Pick<PrismaClient, 'apiClient'>,
  key: string,
): Promise<{ id: string; name: string; scopes: Scope[]; apiVersion: string } | undefined> {
  const row = await prisma.apiClient.findUnique({
    where: { keyHash: hashApiKey(key) },
    select: { id: true, name: true, scopes: true, revokedAt: true, apiVersion: true },
  });
  if (!row || row.revokedAt) return undefined;
  return { id: row.id, name: row.name, scopes: row.scopes.filter(isScope), apiVersion: row.apiVersion };
}

/**
 * The organization an API key belongs to (not revoked), asked before any organization is named:
 * platform mode routes a request by its key. Answered by the database function
 * timbra_key_organization (migration 20261221000000), the one thing a session without an
 * organization may learn of `api_clients`; the organization's own client then checks the key.
 */
export async function keyOrganization(db: RawDb, key: string): Promise<string | undefined> {
  const [row] = await queryRows(
    db,
    z.object({ organization: z.string().nullable() }),
    Prisma.sql`SELECT timbra_key_organization(${hashApiKey(key)})::text AS organization`,
  );
  return row?.organization ?? undefined;
}

/** Records that a key was used (callers throttle it: once a minute a key is enough). */
export async function touchApiKey(prisma: Pick<PrismaClient, 'apiClient'>, id: string): Promise<void> {
  await prisma.apiClient.update({ where: { id }, data: { lastUsedAt: new Date() } });
}

/**
 * Makes the keys from configuration (API_KEYS) what it says: each listed key created or updated (its
 * hash, its scopes; un-revoked), and every key that came from configuration but is no longer listed
 * revoked — API_KEYS is their source of truth. Keys made with keys:create or POST /v1/keys are left
 * alone. @returns the names revoked now.
 */
export async function syncConfiguredApiKeys(
  prisma: Pick<PrismaClient, 'apiClient'>,
  organizationId: string,
  keys: readonly { name: string; key: string; scopes: readonly Scope[] }[],
): Promise<string[]> {
  for (const k of keys) {
    const data = { keyHash: hashApiKey(k.key), prefix: keyPrefix(k.key), scopes: [...k.scopes], revokedAt: null };
    await prisma.apiClient.upsert({
      where: { name_organizationId: { name: k.name, organizationId } },
      create: { organizationId, name: k.name, source: 'config', ...data },
      update: { source: 'config', ...data },
    });
  }
  const gone = await prisma.apiClient.findMany({
    where: { source: 'config', revokedAt: null, name: { notIn: keys.map((k) => k.name) } },
    select: { name: true },
  });
  if (gone.length > 0)
    await prisma.apiClient.updateMany({
      where: { name: { in: gone.map((g) => g.name) } },
      data: { revokedAt: new Date() },
    });
  return gone.map((g) => g.name);
}
