import type { Router } from 'express';
import { isUuid } from '@timbra/db';
import { ApiError } from './errors.ts';

/**
 * Answers 404 `not_found` for any route parameter among `names` that is not a UUID, before a handler
 * runs: such an id names nothing, and must never reach the database (where it would be a cast error).
 * The ids are kept in `res.locals.ids` for the request's log line (Express restores `req.params` when
 * an error leaves the router).
 */
export function uuidParams(router: Router, ...names: string[]): void {
  for (const name of names)
    router.param(name, (_req, res, next, value: string) => {
      res.locals.ids = { ...(res.locals.ids as Record<string, string> | undefined), [name]: value };
      next(isUuid(value) ? undefined : new ApiError('not_found'));
    });
}
