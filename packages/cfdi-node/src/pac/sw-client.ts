import { randomBytes } from 'node:crypto';
import { DEFAULT_TIMEOUTS, failureError, PacHttp, type PacTimeouts } from './http.ts';
import { SatStatusClient } from './sat-status-client.ts';
import { parseSwBody, SwSession, swRejection } from './sw-session.ts';
import {
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

const STAMP_PATH = 'v4/cfdi33/stamp/v4';
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
  private readonly session: SwSession;

  constructor(config: SwClientConfig) {
    this.name = config.name;
    const timeouts = config.timeouts ?? DEFAULT_TIMEOUTS;
    this.http = new PacHttp(config.baseUrl, timeouts);
    this.sat = new SatStatusClient(config.satStatusUrl, config.name, timeouts);
    this.session = new SwSession(
      config.name,
      this.http,
      config,
      config.now ?? Date.now,
      config.renewBeforeMs ?? 5 * 60_000,
    );
  }

  async stamp(frozenXml: string, options: StampOptions): Promise<StampResult> {
    const { body, contentType } = multipartXml(frozenXml);
    const response = await this.session.authorized(
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
    const response = await this.session.authorized(
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
    const body = parseSwBody(this.name, response, 'lookup');
    const cfdi = body.data?.cfdi;
    if (body.status !== 'success' || typeof cfdi !== 'string') throw swRejection(this.name, response, body, 'lookup');
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
    const response = await this.session.authorized(
      (token) =>
        this.http.get(`${LOOKUP_PATH}/customid/${encodeURIComponent(options.idempotencyKey)}`, {
          headers: { authorization: `Bearer ${token}` },
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      'lookup',
    );
    if (response.statusCode === 404) return undefined;
    const body = parseSwBody(this.name, response, 'lookup');
    const cfdi = body.data?.cfdi;
    if (body.status !== 'success' || typeof cfdi !== 'string') throw swRejection(this.name, response, body, 'lookup');
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
    const response = await this.session.authorized(
      (token) =>
        this.http.post(CANCEL_CSD_PATH, {
          body: JSON.stringify(payload),
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        }),
      'cancel',
    );
    const body = parseSwBody(this.name, response, 'cancel');
    const acuse = body.data?.acuse;
    const codes = body.data?.uuid as Record<string, string> | undefined;
    if (body.status !== 'success' || typeof acuse !== 'string' || !codes)
      throw swRejection(this.name, response, body, 'cancel');
    const uuidCode = Object.entries(codes).find(([u]) => u.toUpperCase() === request.uuid.toUpperCase())?.[1] ?? '';
    return { pac: this.name, uuid: request.uuid, uuidCode, acuse };
  }

  status(request: StatusRequest): Promise<StatusResult> {
    return this.sat.status(request);
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
