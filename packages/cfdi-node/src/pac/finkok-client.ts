import { createPrivateKey, X509Certificate } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEFAULT_TIMEOUTS,
  failureError,
  networkFailure,
  PacHttp,
  type PacHttpResponse,
  type PacTimeouts,
} from './http.ts';
import { SatStatusClient } from './sat-status-client.ts';
import { sanitized } from './sw-session.ts';
import {
  findElement,
  findElements,
  normalizeCode,
  PacError,
  PacErrorCode,
  soapBody,
  soapEnvelope,
  stampResultFromTfd,
  textElement,
  textOf,
  tfdXmlOf,
  translateFinkokStamp,
  type CancelRequest,
  type CancelResult,
  type PacAnswer,
  type PacClient,
  type StampOptions,
  type StampResult,
  type StatusRequest,
  type StatusResult,
  type XmlElement,
} from '@timbra/cfdi-core';

/** Configuration of a Finkok client. */
export interface FinkokClientConfig {
  name: string;
  /** Base URL, e.g. `https://demo-facturacion.finkok.com`. */
  baseUrl: string;
  username: string;
  password: string;
  satStatusUrl: string;
  timeouts?: PacTimeouts;
  /** How often to ask `stamped` when a 307 came without the original. Default 3. */
  recoverAttempts?: number;
  /** Pause between those attempts. Default 500 ms. */
  recoverDelayMs?: number;
}

const STAMP_NS = 'http://facturacion.finkok.com/stamp';
const CANCEL_NS = 'http://facturacion.finkok.com/cancel';
const APPS_NS = 'apps.services.soap.core.views';

/**
 * Finkok SOAP 1.1 client: `stamp` (or `quick_stamp`) with the XML in base64, `stamped` to recover a
 * previous stamp of the same XML (603 when there is none), `cancel`. Finkok reports most outcomes as
 * HTTP 200 with `Incidencias` (CodigoError, MensajeIncidencia).
 */
export class FinkokClient implements PacClient {
  readonly name: string;
  private readonly http: PacHttp;
  private readonly sat: SatStatusClient;

  constructor(private readonly config: FinkokClientConfig) {
    this.name = config.name;
    const timeouts = config.timeouts ?? DEFAULT_TIMEOUTS;
    this.http = new PacHttp(config.baseUrl, timeouts);
    this.sat = new SatStatusClient(config.satStatusUrl, config.name, timeouts);
  }

  async stamp(frozenXml: string, options: StampOptions): Promise<StampResult> {
    const answer = await this.call('stamp', frozenXml, options.signal);
    switch (answer.kind) {
      case 'stamp':
        return stampResultFromTfd(this.name, frozenXml, this.tfdFrom(answer.cfdi ?? ''));
      case 'already':
        // 307 may carry the previous stamp; when it does not, `stamped` returns it (it may take a
        // moment to be queryable right after the first stamp).
        if (answer.cfdi)
          return stampResultFromTfd(this.name, frozenXml, this.tfdFrom(answer.cfdi), { code: answer.code });
        return this.stampedWithRetries(frozenXml, answer.code, options.signal);
      case 'not_found':
      case 'failure':
        throw failureError(
          this.name,
          answer.kind === 'failure' ? answer.failure : { type: 'pac', pacCode: answer.code },
          `stamp: ${answer.message}`,
        );
    }
  }

  recover(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult> {
    return this.stamped(frozenXml, 'STAMPED', options.signal);
  }

  /** Finkok's `stamped`: its stamp of this very document, or none (its dedupe is by document). */
  async lookup(
    frozenXml: string,
    options: { idempotencyKey: string; uuid?: string; signal?: AbortSignal },
  ): Promise<StampResult | undefined> {
    try {
      return await this.stamped(frozenXml, 'STAMPED', options.signal);
    } catch (error) {
      if (error instanceof PacError && error.code === PacErrorCode.NotFound) return undefined;
      throw error;
    }
  }

  async cancel(request: CancelRequest): Promise<CancelResult> {
    const certificate = new X509Certificate(request.csd.cer);
    // Finkok takes the CSD as PEM, the key encrypted with the Finkok account password.
    const keyPem = createPrivateKey({
      key: Buffer.from(request.csd.key),
      format: 'der',
      type: 'pkcs8',
      passphrase: request.csd.password,
    }).export({
      format: 'pem',
      type: 'pkcs8',
      cipher: 'aes-256-cbc',
      passphrase: this.config.password,
    });
    const folio =
      `<can:UUIDS><apps:UUID UUID="${request.uuid}" Motivo="${request.motivo}" FolioSustitucion="${request.folioSustitucion ?? ''}"/></can:UUIDS>` +
      textElement('can', 'username', this.config.username) +
      textElement('can', 'password', this.config.password) +
      textElement('can', 'taxpayer_id', request.rfcEmisor) +
      textElement('can', 'cer', Buffer.from(certificate.toString()).toString('base64')) +
      textElement('can', 'key', Buffer.from(keyPem).toString('base64'));
    const envelope = soapEnvelope({ prefix: 'can', ns: CANCEL_NS, name: 'cancel' }, folio).replace(
      `xmlns:can="${CANCEL_NS}"`,
      `xmlns:can="${CANCEL_NS}" xmlns:apps="${APPS_NS}"`,
    );
    const result = await this.post('servicios/soap/cancel', 'cancel', envelope);
    const folioElement = findElements(result, 'Folio').find(
      (f) => textOf(findElement(f, 'UUID')).toUpperCase() === request.uuid.toUpperCase(),
    );
    const acuse = textOf(findElement(result, 'Acuse'));
    if (!folioElement) {
      const cod = textOf(findElement(result, 'CodEstatus'));
      throw failureError(
        this.name,
        { type: 'pac', pacCode: normalizeCode(cod || 'CANCEL') },
        `cancel: ${cod || 'no folio in the answer'}`,
      );
    }
    return { pac: this.name, uuid: request.uuid, uuidCode: textOf(findElement(folioElement, 'EstatusUUID')), acuse };
  }

  status(request: StatusRequest): Promise<StatusResult> {
    return this.sat.status(request);
  }

  private async stampedWithRetries(frozenXml: string, code: string, signal?: AbortSignal): Promise<StampResult> {
    const attempts = this.config.recoverAttempts ?? 3;
    for (let i = 1; ; i++) {
      try {
        return await this.stamped(frozenXml, code, signal);
      } catch (error) {
        if (!(error instanceof PacError) || error.code !== PacErrorCode.NotFound || i >= attempts) {
          // 307 said it exists: not finding it yet is not a "never stamped", it is unknown.
          throw error instanceof PacError && error.code === PacErrorCode.NotFound
            ? new PacError({
                outcome: 'ambiguous',
                pacCode: code,
                pac: this.name,
                message: 'stamped before, original not retrievable yet',
              })
            : error;
        }
        await sleep(this.config.recoverDelayMs ?? 500, undefined, signal ? { signal } : undefined);
      }
    }
  }

  private async stamped(frozenXml: string, recoveryCode: string, signal?: AbortSignal): Promise<StampResult> {
    const answer = await this.call('stamped', frozenXml, signal);
    switch (answer.kind) {
      case 'stamp':
      case 'already':
        if (!answer.cfdi)
          throw failureError(this.name, { type: 'unreadable', status: 200 }, 'stamped answer without xml');
        return stampResultFromTfd(this.name, frozenXml, this.tfdFrom(answer.cfdi), { code: recoveryCode });
      case 'not_found':
        throw new PacError({
          code: PacErrorCode.NotFound,
          outcome: 'permanent',
          pacCode: answer.code,
          pac: this.name,
          message: answer.message,
        });
      case 'failure':
        throw failureError(this.name, answer.failure, `stamped: ${answer.message}`);
    }
  }

  private async call(operation: 'stamp' | 'stamped', frozenXml: string, signal?: AbortSignal): Promise<PacAnswer> {
    const children =
      textElement('stamp', 'xml', Buffer.from(frozenXml, 'utf8').toString('base64')) +
      textElement('stamp', 'username', this.config.username) +
      textElement('stamp', 'password', this.config.password);
    const response = await this.send(
      'servicios/soap/stamp',
      operation,
      soapEnvelope({ prefix: 'stamp', ns: STAMP_NS, name: operation }, children),
      signal,
    );
    return translateFinkokStamp(response.statusCode, response.body, operation);
  }

  private async send(
    path: string,
    operation: string,
    envelope: string,
    signal?: AbortSignal,
  ): Promise<PacHttpResponse> {
    try {
      return await this.http.post(path, {
        body: envelope,
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: operation },
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      throw failureError(this.name, networkFailure(error), `${operation} request failed`, sanitized(error));
    }
  }

  private async post(path: string, operation: string, envelope: string): Promise<XmlElement> {
    const response = await this.send(path, operation, envelope);
    let body: XmlElement | undefined;
    try {
      body = soapBody(response.body);
    } catch {
      body = undefined;
    }
    if (response.statusCode >= 300 || !body || body.local === 'Fault') {
      const fault = body ? textOf(findElement(body, 'faultstring')) : '';
      const failure =
        response.statusCode < 300
          ? { type: 'unreadable' as const, status: response.statusCode }
          : { type: 'http' as const, status: response.statusCode };
      throw failureError(this.name, failure, `${operation}: ${fault || `HTTP ${response.statusCode}`}`);
    }
    return findElement(body, `${operation}Result`) ?? body;
  }

  private tfdFrom(stampedCfdi: string): string {
    try {
      return tfdXmlOf(stampedCfdi);
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
