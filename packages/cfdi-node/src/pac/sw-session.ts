/**
 * SW's session and envelope: the bearer token (from user and password; valid 2 h, cached and renewed
 * before expiry, one authentication at a time, renewed once on a 401), reading SW's JSON answers,
 * and the error a refusal becomes.
 */
import { normalizeCode, type PacError } from '@timbra/cfdi-core';
import { failureError, networkFailure, type PacHttp, type PacHttpResponse } from './http.ts';

const AUTH_PATH = 'v2/security/authenticate';

/** SW's JSON envelope: `{ status, data, message, messageDetail }`. */
export interface SwBody {
  status?: string;
  message?: string;
  messageDetail?: string;
  data?: Record<string, unknown> & { token?: string; expires_in?: number; tfd?: string; cfdi?: string };
}

/** A client's token: every SW call runs through `authorized`. */
export class SwSession {
  private token: { value: string; expiresAt: number } | undefined;
  private tokenRequest: Promise<string> | undefined;

  constructor(
    private readonly pac: string,
    private readonly http: PacHttp,
    private readonly credentials: { user: string; password: string },
    private readonly now: () => number,
    private readonly renewBeforeMs: number,
  ) {}

  /** Runs a request with a valid token; on a 401 renews the token once and runs it again. */
  async authorized(send: (token: string) => Promise<PacHttpResponse>, what: string): Promise<PacHttpResponse> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.validToken();
      let response: PacHttpResponse;
      try {
        response = await send(token);
      } catch (error) {
        throw failureError(this.pac, networkFailure(error), `${what} request failed`, sanitized(error));
      }
      if (response.statusCode !== 401 || attempt > 0) return response;
      this.token = undefined;
    }
  }

  private async validToken(): Promise<string> {
    if (this.token && this.now() < this.token.expiresAt - this.renewBeforeMs) return this.token.value;
    // One authentication at a time: concurrent stamps share it.
    this.tokenRequest ??= this.authenticate().finally(() => {
      this.tokenRequest = undefined;
    });
    return this.tokenRequest;
  }

  private async authenticate(): Promise<string> {
    let response: PacHttpResponse;
    try {
      response = await this.http.post(AUTH_PATH, {
        body: JSON.stringify({ user: this.credentials.user, password: this.credentials.password }),
        headers: { 'content-type': 'application/json' },
      });
    } catch (error) {
      throw failureError(this.pac, networkFailure(error), 'authentication failed', sanitized(error));
    }
    const body = parseSwBody(this.pac, response, 'authenticate');
    const token = body.data?.token;
    if (body.status !== 'success' || typeof token !== 'string')
      throw swRejection(this.pac, response, body, 'authenticate');
    // expires_in: seconds from now, or (some SW deployments) an epoch in seconds.
    const expiresIn = Number(body.data?.expires_in ?? 7200);
    const expiresAt = expiresIn > 1e9 ? expiresIn * 1000 : this.now() + expiresIn * 1000;
    this.token = { value: token, expiresAt };
    return token;
  }
}

/** SW's JSON answer; unreadable: a 2xx may be a stamp (ambiguous), anything else a refusal. */
export function parseSwBody(pac: string, response: PacHttpResponse, what: string): SwBody {
  try {
    return JSON.parse(response.body) as SwBody;
  } catch {
    // A 2xx we cannot read may be a stamp; any other status is refused with no readable code.
    const failure =
      response.statusCode < 300
        ? { type: 'unreadable' as const, status: response.statusCode }
        : { type: 'http' as const, status: response.statusCode };
    throw failureError(pac, failure, `unreadable ${what} answer`);
  }
}

/** SW's refusal as a PacError: its message normalized to a code, a 2xx refusal counted as a 400. */
export function swRejection(pac: string, response: PacHttpResponse, body: SwBody, what: string): PacError {
  const code = body.message ? normalizeCode(body.message) : undefined;
  const status = response.statusCode < 300 ? 400 : response.statusCode;
  return failureError(
    pac,
    { type: 'http', status, ...(code ? { pacCode: code } : {}) },
    `${what}: ${body.message ?? 'no message'}${body.messageDetail ? ` — ${body.messageDetail}` : ''}`,
  );
}

/**
 * Only a transport error's code and message may travel as a cause: nothing of the request (the
 * bearer token, the password in a body) is ever copied into it.
 */
export function sanitized(error: unknown): Error {
  const e = error as { code?: string; message?: string };
  return new Error(`${e.code ?? 'ERROR'}: ${e.message ?? String(error)}`);
}
