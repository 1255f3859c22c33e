import type { Router } from 'express';
import { isUuid } from '@timbra/db';
import { ApiError } from '../errors.ts';

/**
 * Answers 404 `not_found` for any route parameter among `names` that is not a UUID, before a handler
 * runs: such an id names nothing, and must never reach the database (where it would be a cast error).
 */
export function uuidParams(router: Router, ...names: string[]): void {
  for (const name of names)
    router.param(name, (_req, _res, next, value: string) =>
      next(isUuid(value) ? undefined : new ApiError('not_found')),
    );
}
