import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { databaseTrouble, PASSING_TROUBLES } from '@timbra/db/light';
import { DomainError } from '../domain-errors.ts';
import { API_ERRORS, ApiError, errorTypeOf, fromDomainError, paramOf } from './errors.ts';
import { errorDocPath } from './reference.ts';

/** One error middleware: `{ error: { type, code, message, param?, details?, docUrl, requestId } }`; never a stack trace. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = error as { type?: string; status?: number; message?: string };
    let apiError: ApiError;
    if (error instanceof ApiError) apiError = error;
    else if (error instanceof DomainError) apiError = fromDomainError(error);
    else if (e.type === 'entity.parse.failed') apiError = new ApiError('malformed_json');
    else if (e.type === 'entity.too.large') apiError = new ApiError('payload_too_large');
    else if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported')
      apiError = new ApiError('unsupported_media_type');
    else if (typeof e.status === 'number' && e.status >= 400 && e.status < 500)
      apiError = new ApiError('malformed_json', 'The request could not be read.');
    else {
      const trouble = passingTrouble(error);
      if (trouble) {
        // Postgres down, restarting or every connection busy: the caller (a provider redelivering,
        // a client retrying) tries again later; what went wrong is logged, never sent.
        logger.warn({ trouble: trouble.kind, requestId: req.requestId }, trouble.message);
        apiError = new ApiError('database_unavailable', undefined, undefined, { 'Retry-After': '5' });
      } else {
        logger.error({ err: error, requestId: req.requestId }, 'unexpected error');
        apiError = new ApiError('internal');
      }
    }
    if (apiError.status >= 500 && apiError.code !== 'internal' && apiError.code !== 'database_unavailable')
      logger.warn({ code: apiError.code, requestId: req.requestId }, apiError.message);
    for (const [k, v] of Object.entries(apiError.headers ?? {})) res.set(k, v);
    res.locals.errorCode = apiError.code;
    const param = paramOf(apiError.details);
    res.status(apiError.status).json({
      error: {
        type: errorTypeOf(apiError.code),
        code: apiError.code,
        message: apiError.message || API_ERRORS[apiError.code].message,
        ...(param !== undefined ? { param } : {}),
        ...(apiError.details !== undefined ? { details: apiError.details } : {}),
        docUrl: `${req.get('host') ? `${req.protocol}://${req.get('host')}` : ''}${errorDocPath(apiError.code)}`,
        requestId: req.requestId,
      },
    });
  };
}

/** The database's state, when it is one that passes on its own (PASSING_TROUBLES); else undefined. */
function passingTrouble(error: unknown) {
  const trouble = databaseTrouble(error);
  return trouble && PASSING_TROUBLES.has(trouble.kind) ? trouble : undefined;
}
