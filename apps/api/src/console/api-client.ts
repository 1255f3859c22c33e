/**
 * How the console reaches the API: `@timbra/client` with the session's key, over HTTP to the very
 * socket the browser reached (this process), so each page is answered by the same routes, scopes,
 * row-level security, limits and errors as any integrator's call. Each call is vouched for with the
 * browser's address (a header signed with a key this process draws at start, dropped from any request
 * that does not verify), so the API's limits on failed keys count the address that typed the key,
 * not the console's loopback.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { createTimbra, type Schemas, type Timbra } from '@timbra/client';
import { sameToken } from '../http/html.ts';

export type ApiError = Schemas['Error']['error'];

const VOUCH = 'x-timbra-console-client';

/** Signs and checks the browser's address on the console's own calls; the key lives in this process only. */
export class AddressVouch {
  private readonly key = randomBytes(32);

  sign(address: string): string {
    return `${address} ${createHmac('sha256', this.key).update(address).digest('base64url')}`;
  }

  /**
   * Middleware before the API: a request the console made is answered as from the browser's address
   * (`req.ip`); the header on any other request is removed.
   */
  readonly middleware = (req: Request, _res: Response, next: NextFunction): void => {
    const given = req.headers[VOUCH];
    if (given === undefined) return next();
    delete req.headers[VOUCH];
    const [address, mac] = String(given).split(' ');
    if (address && mac && sameToken(mac, this.sign(address).split(' ')[1]!))
      Object.defineProperty(req, 'ip', { value: address, configurable: true, enumerable: true });
    next();
  };
}

/** Where this process answered `req`: the same socket, from inside. */
function selfUrl(req: Request): string {
  const local = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
  const host = local.includes(':') ? `[${local}]` : local;
  return `http://${host}:${req.socket.localPort}`;
}

/** A client of the API as `key`, for the browser that sent `req`. */
export function apiFor(req: Request, key: string, vouch: AddressVouch): Timbra {
  const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
  return createTimbra({
    baseUrl: selfUrl(req),
    apiKey: key,
    // A page shows what happened; the person decides whether to try again.
    retries: 0,
    fetch: (request) => {
      request.headers.set(VOUCH, vouch.sign(address));
      if (req.requestId) request.headers.set('x-request-id', req.requestId);
      return globalThis.fetch(request);
    },
  });
}

/** The error of a failed answer, or a generic one when the body was not the API's. */
export function errorOf(error: unknown, status: number): ApiError {
  const body = (error as { error?: ApiError } | undefined)?.error;
  return (
    body ?? {
      type: 'api_error',
      code: 'unexpected',
      message: `The API answered ${status}.`,
      docUrl: '/docs/errors',
      requestId: '',
    }
  );
}
