import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { classifyPacFailure, PacError, type PacFailure } from '@timbra/cfdi-core';

/** Timeouts of a PAC client, in milliseconds. */
export interface PacTimeouts {
  /** DNS lookup, TCP connection and TLS handshake, each. Default 5 000. */
  connectMs: number;
  /**
   * Writing the request, then from the request being written to the last byte of the answer (each
   * phase on its own). Default 30 000.
   */
  responseMs: number;
}

export const DEFAULT_TIMEOUTS: PacTimeouts = { connectMs: 5_000, responseMs: 30_000 };

/** Largest answer read from a PAC: a stamped CFDI is well under this. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** An HTTP answer: every status is an answer here (the classifier decides what a status means). */
export interface PacHttpResponse {
  statusCode: number;
  body: string;
}

export interface PacHttpRequest {
  /** Headers; `content-length` is set from the body. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
}

/** Where a request stood when it failed: the phases of the ambiguity rule. */
export type PacHttpPhase = 'lookup' | 'connect' | 'secureConnect' | 'send' | 'response';

/**
 * A request that got no (complete) answer. `sent` says whether the whole request had been handed to
 * the operating system before the failure — the question the ambiguity rule asks. A timeout's code is
 * `ETIMEDOUT` and `phase` the phase that ran out.
 */
export class PacTransportError extends Error {
  readonly code: string;
  readonly sent: boolean;
  readonly phase: PacHttpPhase;
  readonly timedOut: boolean;

  constructor(options: { code: string; sent: boolean; phase: PacHttpPhase; timedOut: boolean; message: string }) {
    super(options.message);
    this.name = 'PacTransportError';
    this.code = options.code;
    this.sent = options.sent;
    this.phase = options.phase;
    this.timedOut = options.timedOut;
  }
}

/**
 * The PAC clients' HTTP transport, on `node:http`/`node:https` with a keep-alive agent per client.
 * It reports the one fact the exactly-once rule needs — was the request fully written before it
 * failed — and enforces a timeout per phase: lookup, connect and TLS handshake (`connectMs` each),
 * writing the request and waiting for the whole answer (`responseMs` each). No redirects, no
 * retries (the queue owns retries), no decompression (none is asked for). The design card's `got`
 * did the same at 2.5–4× the CPU per call (ARCHITECTURE.md, "The PAC clients' HTTP").
 */
export class PacHttp {
  /** The base URL as given (a request to the empty path goes there), and as a prefix for paths. */
  private readonly base: URL;
  private readonly prefix: URL;
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  private readonly secure: boolean;

  constructor(
    baseUrl: string,
    private readonly timeouts: PacTimeouts = DEFAULT_TIMEOUTS,
  ) {
    this.base = new URL(baseUrl);
    this.prefix = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
    const secure = this.base.protocol === 'https:';
    this.secure = secure;
    if (!secure && this.base.protocol !== 'http:') throw new Error(`PAC URL must be http(s): ${this.base.protocol}`);
    this.agent = secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.request = secure ? https.request : http.request;
  }

  post(path: string, options: PacHttpRequest): Promise<PacHttpResponse> {
    return this.send('POST', path, options);
  }

  get(path: string, options: Omit<PacHttpRequest, 'body'> = {}): Promise<PacHttpResponse> {
    return this.send('GET', path, options);
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  private send(method: string, path: string, options: PacHttpRequest): Promise<PacHttpResponse> {
    const url = path === '' ? this.base : new URL(path.replace(/^\//, ''), this.prefix);
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string | number> = { ...options.headers };
    if (body) headers['content-length'] = body.length;
    const { connectMs, responseMs } = this.timeouts;
    const secure = this.secure;

    return new Promise<PacHttpResponse>((resolve, reject) => {
      let phase: PacHttpPhase = 'lookup';
      let sent = false;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;

      const arm = (next: PacHttpPhase, ms: number) => {
        phase = next;
        clearTimeout(timer);
        timer = setTimeout(() => {
          fail(
            new PacTransportError({
              code: 'ETIMEDOUT',
              sent,
              phase,
              timedOut: true,
              message: `timed out (${phase}, ${ms} ms)`,
            }),
          );
        }, ms);
      };
      const fail = (error: PacTransportError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(error);
      };
      const failWith = (error: unknown) => {
        const e = error as { code?: string; name?: string; message?: string };
        const code = e.name === 'AbortError' ? 'ABORT_ERR' : (e.code ?? 'EUNKNOWN');
        fail(
          new PacTransportError({
            code,
            sent,
            phase,
            timedOut: false,
            message: `${code}: ${e.message ?? String(error)}`,
          }),
        );
      };

      const req = this.request(url, {
        method,
        headers,
        agent: this.agent,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      arm('lookup', connectMs);

      req.on('socket', (socket: Socket) => {
        const connected = () => arm('send', responseMs);
        // A kept-alive socket is connected already; a new one goes through lookup, connect and TLS.
        if (!socket.connecting) return connected();
        socket.once('lookup', () => arm('connect', connectMs));
        if (secure) {
          socket.once('connect', () => arm('secureConnect', connectMs));
          socket.once('secureConnect', connected);
        } else {
          socket.once('connect', connected);
        }
      });
      // 'finish': the whole request was handed to the operating system.
      req.on('finish', () => {
        sent = true;
        arm('response', responseMs);
      });
      req.on('error', failWith);
      req.on('response', (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            fail(
              new PacTransportError({
                code: 'ETOOLARGE',
                sent,
                phase,
                timedOut: false,
                message: `answer over ${MAX_ANSWER_BYTES} bytes`,
              }),
            );
            return;
          }
          chunks.push(chunk);
        });
        response.on('error', failWith);
        response.on('close', () => {
          if (!response.complete) failWith(Object.assign(new Error('answer cut short'), { code: 'ECONNRESET' }));
        });
        response.on('end', () => {
          if (settled) return;
          if (!response.complete) {
            failWith(Object.assign(new Error('answer cut short'), { code: 'ECONNRESET' }));
            return;
          }
          settled = true;
          clearTimeout(timer);
          resolve({ statusCode: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.end(body);
    });
  }
}

/** Turns a transport error into the classifier's input. */
export function networkFailure(error: unknown): PacFailure {
  if (error instanceof PacTransportError) {
    return error.timedOut
      ? { type: 'network', code: 'ETIMEDOUT', sent: error.sent, timeoutPhase: error.phase }
      : { type: 'network', code: error.code, sent: error.sent };
  }
  return { type: 'network', code: 'EUNKNOWN', sent: true };
}

/** Builds the PacError for a classified failure (never for stamped/already-stamped outcomes). */
export function failureError(pac: string, failure: PacFailure, message: string, cause?: unknown): PacError {
  const c = classifyPacFailure(failure);
  const outcome = c.outcome === 'stamped' || c.outcome === 'already_stamped' ? 'ambiguous' : c.outcome;
  return new PacError({
    outcome,
    pacCode: c.code,
    pac,
    message: `${message} (${c.reason})`,
    ...(failure.type === 'http' || failure.type === 'unreadable' ? { httpStatus: failure.status } : {}),
    cause,
  });
}
