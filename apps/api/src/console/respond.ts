/**
 * How a console page answers: the page in the layout, a refused form, a failed API answer, and the
 * forms' idempotency keys — shared by every console route.
 */
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Timbra } from '@timbra/client';
import { errorOf, type ApiError } from './api-client.ts';
import { at, errorBox, layout, mexicoDayStart, type Chrome } from './layout.ts';
import { COOKIE, type Session } from './session.ts';

/** What a signed-in page has at hand. */
export interface Signed {
  session: Session;
  timbra: Timbra;
  chrome: Chrome;
  token: (action: string) => string;
  checks: (action: string, given: unknown) => boolean;
}

declare module 'express-serve-static-core' {
  interface Request {
    signed?: Signed;
  }
}

export function send(req: Request, res: Response, status: number, title: string, body: string): void {
  res
    .status(status)
    .type('html')
    .send(layout(title, body, req.signed?.chrome));
}

export function refused(req: Request, res: Response): void {
  send(
    req,
    res,
    403,
    'Refused',
    '<p>The form was not this console’s, or it was sent from another site: nothing was changed.</p>',
  );
}

/**
 * A failed API answer as a page: a key revoked since sign-in ends the session; the rest is shown
 * with the API's own message, code and request id.
 */
export function failed(req: Request, res: Response, status: number, error: ApiError, title = 'Not done'): void {
  if (status === 401) {
    res.clearCookie(COOKIE, { path: '/console' });
    return void res.redirect(303, at('/login'));
  }
  send(req, res, status, status === 404 ? 'Not found' : title, errorBox(error));
}

/** A fresh Idempotency-Key for a form (the API dedupes a form sent twice on it). */
export const once = () => randomUUID();

/** The idempotency key a form carries, when it is one. */
export function onceOf(body: unknown): string | undefined {
  const given = (body as { once?: unknown } | undefined)?.once;
  return typeof given === 'string' && /^[0-9a-f-]{36}$/.test(given) ? given : undefined;
}

/** A date field's instant bounds for the API (Mexico City days, `to` included). */
export function createdBounds(from: string, to: string): { createdFrom?: string; createdTo?: string } {
  const day = /^\d{4}-\d{2}-\d{2}$/;
  return {
    ...(day.test(from) ? { createdFrom: mexicoDayStart(from) } : {}),
    ...(day.test(to) ? { createdTo: mexicoDayStart(to, 1) } : {}),
  };
}

/** The form's own Idempotency-Key: a form sent twice is done once. */
export function idempotency(req: Request): { 'Idempotency-Key'?: string } {
  const key = onceOf(req.body);
  return key ? { 'Idempotency-Key': key } : {};
}

/** A value as text (trimmed; "" when not text). */
export const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');

/** A form field as text (trimmed; "" when absent or not text). */
export function field(req: Request, name: string): string {
  return text((req.body as Record<string, unknown> | undefined)?.[name]);
}

/**
 * A form that changes something: refused unless its token is this session's for `action`; then
 * `call` (the API, with the form's Idempotency-Key); a refusal shown under `title`, else a redirect
 * to where `next` says.
 */
export async function formAction<T>(
  req: Request,
  res: Response,
  form: { action: string; title: string },
  call: (
    timbra: Timbra,
    headers: { 'Idempotency-Key'?: string },
  ) => Promise<{ data?: T; error?: unknown; response: globalThis.Response }>,
  next: (data: T) => string,
): Promise<void> {
  const signed = req.signed!;
  if (!signed.checks(form.action, field(req, 'token'))) return refused(req, res);
  const answer = await call(signed.timbra, idempotency(req));
  if (answer.error !== undefined)
    return failed(req, res, answer.response.status, errorOf(answer.error, answer.response.status), form.title);
  res.redirect(303, next(answer.data as T));
}
