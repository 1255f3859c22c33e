import type { NextFunction, Request, Response } from 'express';
import type { PrismaClient } from '@timbra/db';
import {
  API_VERSIONS,
  CURRENT_API_VERSION,
  findApiKey,
  isApiVersion,
  keyPrefix,
  touchApiKey,
  type ApiVersion,
  type Scope,
} from '@timbra/db/keys';
import { ApiError } from '../http/errors.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';

export interface ApiClientIdentity {
  id: string;
  name: string;
  scopes: readonly Scope[];
  /** The API version the key is answered in unless a request names another. */
  apiVersion: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    client?: ApiClientIdentity;
    requestId?: string;
    /** The API version this request is answered in (Timbra-Version, else its key's). */
    apiVersion?: ApiVersion;
  }
}

/**
 * API key authentication (`Authorization: Bearer <key>` or `X-Api-Key`). The key's row is read on
 * every request (one indexed lookup by its hash), so a revoked key is refused at once on every API
 * instance; when a key was last used is written at most once a minute per instance.
 */
export function apiKeyAuth(prisma: PrismaClient, failures: FailureLimiter) {
  const touched = new Map<string, number>();
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const address = req.ip ?? 'unknown';
      if (failures.blocked(address))
        throw new ApiError('rate_limited', 'Too many failed authentications from this address.');
      const key = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? req.get('x-api-key');
      const identity = key && key.length <= 512 ? await findApiKey(prisma, key) : undefined;
      if (!identity) {
        if (failures.fail(address, key ? keyPrefix(key) : undefined))
          throw new ApiError('rate_limited', 'Too many failed authentications.');
        throw new ApiError('unauthorized');
      }
      req.client = identity;
      if (Date.now() - (touched.get(identity.id) ?? 0) > 60_000) {
        touched.set(identity.id, Date.now());
        // Best effort: a failed write of last_used_at never fails the request.
        touchApiKey(prisma, identity.id).catch(() => undefined);
      }
      next();
    } catch (error) {
      next(error);
    }
  };
}

/**
 * The scope a /v1 request needs — the one table of who may do what: `any` key for `GET /keys/me`; `admin` for keys, re-drives,
 * provider events and webhook endpoints (they receive every customer's data); `read` to GET; `cancel` to cancel an invoice; `write` for every other change
 * (payments, refunds, installments, corrections, replacements, products, customers).
 */
export function scopeFor(method: string, path: string): Scope | 'any' {
  // A key may always ask about itself: which key and organization it is, and what it may do.
  if ((method === 'GET' || method === 'HEAD') && /^\/keys\/me\/?$/.test(path)) return 'any';
  if (/^\/(keys|outbox|webhook-events|webhook-endpoints)(\/|$)/.test(path)) return 'admin';
  // Issuing a period's factura global now, before its close timer.
  if (method === 'POST' && /^\/globals\/?$/.test(path)) return 'admin';
  if (method === 'GET' || method === 'HEAD') return 'read';
  if (/\/cancel$/.test(path)) return 'cancel';
  return 'write';
}

/** 403 forbidden (details: the scope needed) unless the request's key has `scope`. */
export function assertScope(req: Request, scope: Scope): void {
  if (!req.client?.scopes.includes(scope))
    throw new ApiError('forbidden', `This API key lacks the ${scope} scope.`, [
      { path: 'scope', message: `needs ${scope}; the key has ${req.client?.scopes.join(', ') || 'none'}` },
    ]);
}

/** Middleware: every /v1 request needs the scope its method and path ask for (scopeFor). */
export function requireScopes(req: Request, _res: Response, next: NextFunction): void {
  try {
    const scope = scopeFor(req.method, req.path);
    if (scope !== 'any') assertScope(req, scope);
    next();
  } catch (error) {
    next(error);
  }
}

/**
 * Middleware after authentication: the request is answered in the version its `Timbra-Version` names,
 * else in its key's — the current one for the platform key (docs/versioning.md); the answer says
 * which in its own `Timbra-Version`.
 */
export function apiVersion(req: Request, res: Response, next: NextFunction): void {
  const asked = req.get('timbra-version');
  const version = asked ?? req.client?.apiVersion ?? CURRENT_API_VERSION;
  if (!isApiVersion(version)) {
    next(
      new ApiError('unknown_api_version', undefined, [
        { path: 'Timbra-Version', message: `one of ${API_VERSIONS.join(', ')}` },
      ]),
    );
    return;
  }
  req.apiVersion = version;
  res.set('Timbra-Version', version);
  next();
}
