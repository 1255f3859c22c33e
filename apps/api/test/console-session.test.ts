import { describe, expect, it } from '@jest/globals';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { COOKIE, SessionSeal } from '../src/console/session.ts';

const SECRET = 'console-session-test-secret-0123456789';

/** A request carrying `cookie` as the browser sends it. */
const requestWith = (cookie: string) =>
  ({ get: (name: string) => (name === 'cookie' ? cookie : undefined) }) as Request;

/** The cookie `start` sets, captured from the response. */
function started(seal: SessionSeal, label?: string): string {
  let value = '';
  const res = { cookie: (_name: string, v: string) => void (value = v) } as unknown as Response;
  seal.start({ secure: false } as Request, res, 'tk_live_secret', label);
  return value;
}

/**
 * A cookie as a console before the header's label sealed it: three fields. Written here by hand, the
 * way that version wrote it (the key derivation and layout are the cookie's format, not ours to change).
 */
function sealedByAnEarlierVersion(fields: unknown[], secret = SECRET): string {
  const key = createHash('sha256').update(`timbra-console-seal\0${secret}`).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(fields)), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

describe('the console session cookie', () => {
  const seal = new SessionSeal(SECRET, 8);

  it('opens what it sealed, with the header label', () => {
    const session = seal.of(requestWith(`${COOKIE}=${started(seal, 'pos (tk_live_ab…) · ACME')}`));
    expect(session).toEqual(expect.objectContaining({ key: 'tk_live_secret', label: 'pos (tk_live_ab…) · ACME' }));
  });

  it('opens a cookie sealed before the label existed (three fields): signed in, no label', () => {
    const cookie = sealedByAnEarlierVersion(['tk_live_old', 'session-id', Date.now() + 60_000]);
    const session = seal.of(requestWith(`other=1; ${COOKIE}=${cookie}`));
    expect(session).toEqual({ key: 'tk_live_old', id: 'session-id', expiresAt: expect.any(Number) });
  });

  it('refuses an expired, tampered, foreign-secret or malformed cookie', () => {
    const expired = sealedByAnEarlierVersion(['k', 'id', Date.now() - 1]);
    const foreign = sealedByAnEarlierVersion(['k', 'id', Date.now() + 60_000], 'another-secret-0123456789');
    const good = started(seal);
    const tampered = `${good.slice(0, -2)}${good.endsWith('AA') ? 'BB' : 'AA'}`;
    const wrongShape = sealedByAnEarlierVersion([1, 'id', Date.now() + 60_000]);
    for (const cookie of [expired, foreign, tampered, wrongShape, 'short'])
      expect(seal.of(requestWith(`${COOKIE}=${cookie}`))).toBeUndefined();
    expect(seal.of(requestWith('other=1'))).toBeUndefined();
  });
});
