/**
 * API keys as data, for admin keys: make one (its secret shown once), list them (never the secret),
 * revoke one (refused at once on every API instance). The ops CLI does the same (keys:create,
 * keys:list, keys:revoke); both call @timbra/db's api-keys. Any key may ask about itself
 * (`GET /keys/me`): which key it is, what it may do, and whose documents it makes.
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { PrismaClient } from '@timbra/db';
import {
  ApiKeyNameTaken,
  createApiKey,
  DEFAULT_SCOPES,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  SCOPES,
  API_KEY_NAME_RULE,
  isApiKeyName,
  API_VERSIONS,
  type ApiKeyView,
  type KeyMode,
} from '@timbra/db/keys';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { onlyParams, validation } from '../http/lists.ts';

export const createKeySchema = z
  .object({
    name: z.string().refine(isApiKeyName, API_KEY_NAME_RULE),
    scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length).optional(),
    /** The version the key is answered in (docs/versioning.md); default: the current one. */
    apiVersion: z.enum(API_VERSIONS).optional(),
  })
  .strict();

export function keyView(k: ApiKeyView) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    source: k.source,
    apiVersion: k.apiVersion,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}

/** The organization whose keys these are, as `GET /keys/me` names it. */
export interface KeyOrganization {
  id: string;
  rfc: string;
  nombre: string;
  /** A test organization's keys are `tk_test_…` and its documents go to the test PAC only. */
  mode: KeyMode;
}

/** The organization an app's payments are recorded for, as its keys name it. */
export function keyOrganizationOf(payments: {
  organizationId: string;
  settings: { emisor: { rfc: string; nombre: string; test?: boolean | undefined } };
}): KeyOrganization {
  const { rfc, nombre, test } = payments.settings.emisor;
  return { id: payments.organizationId, rfc, nombre, mode: test ? 'test' : 'live' };
}

export function keyRoutes(prisma: PrismaClient, organization: KeyOrganization): Router {
  const router = Router();
  uuidParams(router, 'id');
  const { mode } = organization;

  // Before any `/keys/:id…` route; the key was read by authentication a moment ago.
  router.get('/keys/me', async (req, res) => {
    onlyParams(req, []);
    const me = req.client && (await getApiKey(prisma, req.client.id));
    // Revoked between authentication and this read: as if it had been refused a moment earlier.
    if (!me || me.revokedAt) throw new ApiError('unauthorized');
    res.json({ ...keyView(me), organization });
  });

  router.post('/keys', async (req: Request, res: Response) => {
    const parsed = createKeySchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    try {
      const made = await createApiKey(
        prisma,
        parsed.data.name,
        [...new Set(parsed.data.scopes ?? DEFAULT_SCOPES)],
        mode,
        parsed.data.apiVersion,
      );
      // The only time the key is seen: it is stored hashed.
      res.status(201).json({ key: made.key, ...keyView(made.apiKey) });
    } catch (error) {
      if (error instanceof ApiKeyNameTaken) throw new ApiError('key_name_taken');
      throw error;
    }
  });

  router.get('/keys', async (req, res) => {
    onlyParams(req, []);
    res.json({ data: (await listApiKeys(prisma)).map(keyView) });
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const revoked = await revokeApiKey(prisma, String(req.params.id));
    if (!revoked) throw new ApiError('not_found');
    res.json(keyView(revoked));
  });

  return router;
}
