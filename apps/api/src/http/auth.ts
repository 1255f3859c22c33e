import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { PrismaClient } from '@timbra/db';
import { ApiError } from '../errors.ts';

export interface ApiClientIdentity {
  id: string;
  name: string;
  admin: boolean;
}

declare module 'express-serve-static-core' {
  interface Request {
    client?: ApiClientIdentity;
    requestId?: string;
  }
}

/** sha256 of an API key: what the database stores. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * API key authentication (`Authorization: Bearer <key>` or `X-Api-Key`). Keys are looked up by their
 * hash and compared in constant time; a small cache avoids a query per request.
 */
export function apiKeyAuth(prisma: PrismaClient) {
  const cache = new Map<string, { identity: ApiClientIdentity | null; at: number }>();
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const key = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? req.get('x-api-key');
      if (!key || key.length > 512) throw new ApiError('unauthorized');
      const hash = hashApiKey(key);
      let entry = cache.get(hash);
      if (!entry || Date.now() - entry.at > 30_000) {
        const row = await prisma.apiClient.findUnique({ where: { keyHash: hash } });
        const identity =
          row && timingSafeEqual(Buffer.from(row.keyHash), Buffer.from(hash))
            ? { id: row.id, name: row.name, admin: row.admin }
            : null;
        entry = { identity, at: Date.now() };
        if (cache.size > 1000) cache.clear();
        cache.set(hash, entry);
      }
      if (!entry.identity) throw new ApiError('unauthorized');
      req.client = entry.identity;
      next();
    } catch (error) {
      next(error);
    }
  };
}
