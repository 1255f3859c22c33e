import { randomBytes } from 'node:crypto';
import {
  DEFAULT_TIMEOUTS,
  failureError,
  networkFailure,
  PacHttp,
  type PacHttpResponse,
  type PacTimeouts,
} from './http.ts';
import { SatStatusClient } from './sat-status-client.ts';
import {
  normalizeCode,
  PacError,
  PacErrorCode,
  parseTfd,
  selloOf,
  stampResultFromTfd,
  tfdXmlOf,
  translateSwStamp,
  type CancelRequest,
  type CancelResult,
  type PacClient,
  type StampOptions,
  type StampResult,
  type StatusRequest,
  type StatusResult,
} from '@timbra/cfdi-core';

/** Configuration of an SW Sapién client. */
export interface SwClientConfig {
  /** Name recorded with every result and error (e.g. `primary`). */
  name: string;
  /** Services base URL, e.g. `https://services.test.sw.com.mx`. */
  baseUrl: string;
  user: string;
  password: string;
  /** URL of the SAT ConsultaCFDIService for `status()`. */
  satStatusUrl: string;
  timeouts?: PacTimeouts;
  /** Renew the token this long before it expires. Default 5 minutes. */
  renewBeforeMs?: number;
  /** Clock, for tests. Default `Date.now`. */
  now?: () => number;
}

/** SW's JSON envelope: `{ status, data, message, messageDetail }`. */
interface SwBody {
  status?: string;
  message?: string;
  messageDetail?: string;
  data?: Record<string, unknown> & { token?: string; expires_in?: number; tfd?: string; cfdi?: string };
}

const STAMP_PATH = 'v4/cfdi33/stamp/v4';
const AUTH_PATH = 'v2/security/authenticate';
const CANCEL_CSD_PATH = 'cfdi33/cancel/csd';
const LOOKUP_PATH = 'datawarehouse/v1/live';

/**
 * SW Sapién REST client. Authenticates with user/password for a bearer token (valid 2 h; cached and
 * renewed before expiry; on a 401 the token is renewed once and the call repeated), stamps with
 * `POST /v4/cfdi33/stamp/v4` (multipart part `xml`) and header `customid` = our stamp key.
 */
export class SwClient implements PacClient {
  readonly name: string;
  private readonly http: PacHttp;
  private readonly sat: SatStatusClient;
  private readonly now: () => number;
  private readonly renewBeforeMs: number;
  private token: { value: string; expiresAt: number } | undefined;
  private tokenRequest: Promise<string> | undefined;

  constructor(private readonly config: SwClientConfig) {
    this.name = config.name;
    const timeouts = config.timeouts ?? DEFAULT_TIMEOUTS;
    this.http = new PacHttp(config.baseUrl, timeouts);
    this.sat = new SatStatusClient(config.satStatusUrl, config.name, timeouts);
    this.now = config.now ?? Date.now;
    this.renewBeforeMs = config.renewBeforeMs ?? 5 * 60_000;
  }

  async stamp(frozenXml: string, options: StampOptions): Promise<StampResult> {
    const { body, contentType } = multipartXml(frozenXml);
    const response = await this.authorized(
      (token) =>
        this.http.post(STAMP_PATH, {
          body,
          headers: { authorization: `Bearer ${token}`, customid: options.idempotencyKey, 'content-type': contentType },
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      'stamp',
    );
    const answer = translateSwStamp(response.statusCode, response.body);
    switch (answer.kind) {
      case 'stamp':
        return stampResultFromTfd(this.name, frozenXml, answer.tfdXml ?? this.tfdFrom(answer.cfdi ?? ''));
      case 'already': {
        // 307 carries the original in data.cfdi / data.tfd; CFDI3307 (customid reused) in data.tfd.
        const tfd = answer.tfdXml ?? (answer.cfdi ? this.tfdFrom(answer.cfdi) : undefined);
        if (!tfd) {
          throw new PacError({
            outcome: 'ambiguous',
            pacCode: answer.code,
            pac: this.name,
            message: 'stamped before, but the original was not returned',
          });
        }
        if (answer.code === 'CFDI3307' && parseTfd(tfd).tfd.selloCFD !== selloOf(frozenXml)) {
          // The key was first used for another document (e.g. one re-frozen after the 72-hour
          // window): that document is the one stamped. Fetch it and hand it back, marked as such.
          const original = await this.recover(frozenXml, { ...options, uuid: parseTfd(tfd).tfd.uuid });
          return { ...original, recoveryCode: 'CFDI3307' };
        }
        return stampResultFromTfd(this.name, frozenXml, tfd, { code: answer.code });
      }
      case 'not_found':
      case 'failure':
        throw failureError(
          this.name,
          answer.kind === 'failure' ? answer.failure : { type: 'pac', pacCode: answer.code },
          `stamp: ${answer.message}`,
        );
    }
  }

  /**
   * With a UUID: SW's lookup of a stamped CFDI. Without one, SW offers no lookup by document, but a
   * resend is one: its dedupe answers 307 with the original stamp.
   */
  async recover(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult> {
    if (options.uuid === undefined) return this.stamp(frozenXml, options);
    const uuid = options.uuid;
    const response = await this.authorized(
      (token) =>
        this.http.get(`${LOOKUP_PATH}/${encodeURIComponent(uuid)}`, {
          headers: { authorization: `Bearer ${token}` },
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      'lookup',
    );
    if (response.statusCode === 404) {
      throw new PacError({
        code: PacErrorCode.NotFound,
        outcome: 'permanent',
        pacCode: 'NOT_FOUND',
        pac: this.name,
        message: `no stamp ${uuid}`,
        httpStatus: 404,
      });
    }
    const body = this.parse(response, 'lookup');
    const cfdi = body.data?.cfdi;
    if (body.status !== 'success' || typeof cfdi !== 'string') throw this.rejection(response, body, 'lookup');
    return stampResultFromTfd(this.name, frozenXml, this.tfdFrom(cfdi), { code: 'LOOKUP' }, cfdi);
  }

  /**
   * By UUID when one is known (SW's lookup of a stamped CFDI), then by customid: SW keeps which
   * document a customid stamped, and answers 404 when it stamped none.
   */
  async lookup(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult | undefined> {
    if (options.uuid !== undefined) {
      try {
        return await this.recover(frozenXml, { ...options, uuid: options.uuid });
      } catch (error) {
        if (!(error instanceof PacError && error.code === PacErrorCode.NotFound)) throw error;
      }
    }
    const response = await this.authorized(
      (token) =>
        this.http.get(`${LOOKUP_PATH}/customid/${encodeURIComponent(options.idempotencyKey)}`, {
          headers: { authorization: `Bearer ${token}` },
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      'lookup',
    );
    if (response.statusCode === 404) return undefined;
    const body = this.parse(response, 'lookup');
    const cfdi = body.data?.cfdi;
    if (body.status !== 'success' || typeof cfdi !== 'string') throw this.rejection(response, body, 'lookup');
    return stampResultFromTfd(this.name, frozenXml, this.tfdFrom(cfdi), { code: 'LOOKUP' }, cfdi);
  }

  async cancel(request: CancelRequest): Promise<CancelResult> {
    const payload = {
      uuid: request.uuid,
      password: request.csd.password,
      rfc: request.rfcEmisor,
      motivo: request.motivo,
      folioSustitucion: request.folioSustitucion ?? '',
      b64Cer: Buffer.from(request.csd.cer).toString('base64'),
      b64Key: Buffer.from(request.csd.key).toString('base64'),
    };
    const response = await this.authorized(
      (token) =>
        this.http.post(CANCEL_CSD_PATH, {
          body: JSON.stringify(payload),
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        }),
      'cancel',
    );
    const body = this.parse(response, 'cancel');
    const acuse = body.data?.acuse;
    const codes = body.data?.uuid as Record<string, string> | undefined;
    if (body.status !== 'success' || typeof acuse !== 'string' || !codes)
      throw this.rejection(response, body, 'cancel');
    const uuidCode = Object.entries(codes).find(([u]) => u.toUpperCase() === request.uuid.toUpperCase())?.[1] ?? '';
    return { pac: this.name, uuid: request.uuid, uuidCode, acuse };
  }

  status(request: StatusRequest): Promise<StatusResult> {
    return this.sat.status(request);
  }

  /** Runs a request with a valid token; on a 401 renews the token once and runs it again. */
  private async authorized(send: (token: string) => Promise<PacHttpResponse>, what: string): Promise<PacHttpResponse> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.validToken();
      let response: PacHttpResponse;
      try {
        response = await send(token);
      } catch (error) {
        throw failureError(this.name, networkFailure(error), `${what} request failed`, sanitized(error));
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
        body: JSON.stringify({ user: this.config.user, password: this.config.password }),
        headers: { 'content-type': 'application/json' },
      });
    } catch (error) {
      throw failureError(this.name, networkFailure(error), 'authentication failed', sanitized(error));
    }
    const body = this.parse(response, 'authenticate');
    const token = body.data?.token;
    if (body.status !== 'success' || typeof token !== 'string') throw this.rejection(response, body, 'authenticate');
    // expires_in: seconds from now, or (some SW deployments) an epoch in seconds.
    const expiresIn = Number(body.data?.expires_in ?? 7200);
    const expiresAt = expiresIn > 1e9 ? expiresIn * 1000 : this.now() + expiresIn * 1000;
    this.token = { value: token, expiresAt };
    return token;
  }

  private parse(response: PacHttpResponse, what: string): SwBody {
    try {
      return JSON.parse(response.body) as SwBody;
    } catch {
      // A 2xx we cannot read may be a stamp; any other status is refused with no readable code.
      const failure =
        response.statusCode < 300
          ? { type: 'unreadable' as const, status: response.statusCode }
          : { type: 'http' as const, status: response.statusCode };
      throw failureError(this.name, failure, `unreadable ${what} answer`);
    }
  }

  private rejection(response: PacHttpResponse, body: SwBody, what: string): PacError {
    const code = body.message ? normalizeCode(body.message) : undefined;
    const status = response.statusCode < 300 ? 400 : response.statusCode;
    return failureError(
      this.name,
      { type: 'http', status, ...(code ? { pacCode: code } : {}) },
      `${what}: ${body.message ?? 'no message'}${body.messageDetail ? ` — ${body.messageDetail}` : ''}`,
    );
  }

  private tfdFrom(cfdi: string): string {
    try {
      return tfdXmlOf(cfdi);
    } catch (cause) {
      throw new PacError({
        outcome: 'ambiguous',
        pacCode: 'BAD_CFDI',
        pac: this.name,
        message: 'the PAC returned an unreadable CFDI',
        cause,
      });
    }
  }
}

/**
 * The multipart/form-data body SW expects: one part named `xml` holding the document's bytes. Built
 * as one buffer (the frozen bytes copied verbatim between the part headers) so it is written to the
 * socket at once.
 */
export function multipartXml(xml: string): { body: Buffer; contentType: string } {
  const boundary = `----timbra${randomBytes(12).toString('hex')}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="xml"; filename="xml"\r\nContent-Type: text/xml\r\n\r\n`;
  const body = Buffer.concat([
    Buffer.from(head, 'utf8'),
    Buffer.from(xml, 'utf8'),
    Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8'),
  ]);
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Only a transport error's code and message may travel as a cause: nothing of the request (the
 * bearer token, the password in a body) is ever copied into it.
 */
export function sanitized(error: unknown): Error {
  const e = error as { code?: string; message?: string };
  return new Error(`${e.code ?? 'ERROR'}: ${e.message ?? String(error)}`);
}
