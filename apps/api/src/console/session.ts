/**
 * The console's session: the API key a merchant signed in with, sealed (AES-256-GCM) into an
 * HttpOnly, SameSite=Strict cookie scoped to /console — the browser's scripts cannot read it, another
 * site cannot send it, and without CONSOLE_SECRET nobody can open it. Every page calls the API with
 * that key, so the console can do exactly what the key can. Forms carry an anti-forgery token bound
 * to the session and to what the form does.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { sameToken } from '../http/html.ts';

export const COOKIE = 'timbra_console';

export interface Session {
  /** The API key, as given at sign-in. */
  key: string;
  /** The session's own id: what its forms' tokens are bound to. */
  id: string;
  /** When it ends (ms since the epoch). */
  expiresAt: number;
  /** What the header says of it: the key's name and prefix, its organization (GET /v1/keys/me). */
  label?: string;
}

export class SessionSeal {
  private readonly sealKey: Buffer;
  private readonly tokenKey: Buffer;

  constructor(
    secret: string,
    private readonly hours: number,
  ) {
    // Two keys from the one secret: one seals cookies, one signs forms.
    this.sealKey = createHash('sha256').update(`timbra-console-seal\0${secret}`).digest();
    this.tokenKey = createHash('sha256').update(`timbra-console-form\0${secret}`).digest();
  }

  /** A new session for `key`, set as the cookie. */
  start(req: Request, res: Response, key: string, label?: string): Session {
    const session = {
      key,
      id: randomBytes(16).toString('base64url'),
      expiresAt: Date.now() + this.hours * 3_600_000,
      ...(label ? { label } : {}),
    };
    res.cookie(COOKIE, this.seal(session), {
      httpOnly: true,
      sameSite: 'strict',
      secure: req.secure,
      path: '/console',
      maxAge: this.hours * 3_600_000,
    });
    return session;
  }

  end(req: Request, res: Response): void {
    res.clearCookie(COOKIE, { httpOnly: true, sameSite: 'strict', secure: req.secure, path: '/console' });
  }

  /** The request's session; undefined when it has none, or one this deployment did not seal, or one expired. */
  of(req: Request): Session | undefined {
    const value = cookieValue(req.get('cookie'), COOKIE);
    if (!value) return undefined;
    const session = this.open(value);
    return session && session.expiresAt > Date.now() ? session : undefined;
  }

  /** The anti-forgery token of a form that does `action` (e.g. `cancel:<invoice id>`) in `session`. */
  token(session: Session, action: string): string {
    return createHmac('sha256', this.tokenKey).update(`${session.id}\0${action}`).digest('base64url');
  }

  checks(session: Session, action: string, given: unknown): boolean {
    return sameToken(given, this.token(session, action));
  }

  private seal(session: Session): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealKey, iv);
    const body = Buffer.concat([
      cipher.update(JSON.stringify([session.key, session.id, session.expiresAt, session.label ?? null])),
      cipher.final(),
    ]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  private open(value: string): Session | undefined {
    try {
      const raw = Buffer.from(value, 'base64url');
      if (raw.length < 29) return undefined;
      const decipher = createDecipheriv('aes-256-gcm', this.sealKey, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const json = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      const [key, id, expiresAt, label] = JSON.parse(json) as [string, string, number, unknown];
      return typeof key === 'string' && typeof id === 'string' && typeof expiresAt === 'number'
        ? { key, id, expiresAt, ...(typeof label === 'string' ? { label } : {}) }
        : undefined;
    } catch {
      // Tampered, truncated, or sealed with another secret: no session.
      return undefined;
    }
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
