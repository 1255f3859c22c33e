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
    return new Promise<PacHttpResponse>((resolve, reject) => {
      const req = this.request(url, {
        method,
        headers,
        agent: this.agent,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      new Exchange(req, this.timeouts, this.secure, resolve, reject).start(body);
    });
  }
}

/**
 * One request and its answer: which phase it is in, whether the request was fully written, the
 * timer of the phase, and the one settlement (resolve or reject) it allows.
 */
class Exchange {
  private phase: PacHttpPhase = 'lookup';
  private sent = false;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: http.ClientRequest,
    private readonly timeouts: PacTimeouts,
    private readonly secure: boolean,
    private readonly resolve: (r: PacHttpResponse) => void,
    private readonly reject: (e: PacTransportError) => void,
  ) {}

  start(body: Buffer | undefined): void {
    const { req, timeouts } = this;
    this.arm('lookup', timeouts.connectMs);
    req.on('socket', (socket: Socket) => this.watch(socket));
    // 'finish': the whole request was handed to the operating system.
    req.on('finish', () => {
      this.sent = true;
      this.arm('response', timeouts.responseMs);
    });
    req.on('error', (e) => this.failWith(e));
    req.on('response', (response) => this.read(response));
    req.end(body);
  }

  /** A kept-alive socket is connected already; a new one goes through lookup, connect and TLS. */
  private watch(socket: Socket): void {
    const { connectMs, responseMs } = this.timeouts;
    const connected = () => this.arm('send', responseMs);
    if (!socket.connecting) return connected();
    socket.once('lookup', () => this.arm('connect', connectMs));
    if (this.secure) {
      socket.once('connect', () => this.arm('secureConnect', connectMs));
      socket.once('secureConnect', connected);
    } else {
      socket.once('connect', connected);
    }
  }

  private read(response: http.IncomingMessage): void {
    const chunks: Buffer[] = [];
    let size = 0;
    const cutShort = () => this.failWith(Object.assign(new Error('answer cut short'), { code: 'ECONNRESET' }));
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) return this.fail('ETOOLARGE', false, `answer over ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(chunk);
    });
    response.on('error', (e) => this.failWith(e));
    response.on('close', () => {
      if (!response.complete) cutShort();
    });
    response.on('end', () => {
      if (this.settled) return;
      if (!response.complete) return cutShort();
      this.settled = true;
      clearTimeout(this.timer);
      this.resolve({ statusCode: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
    });
  }

  private arm(next: PacHttpPhase, ms: number): void {
    this.phase = next;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fail('ETIMEDOUT', true, `timed out (${this.phase}, ${ms} ms)`), ms);
  }

  private failWith(error: unknown): void {
    const e = error as { code?: string; name?: string; message?: string };
    const code = e.name === 'AbortError' ? 'ABORT_ERR' : (e.code ?? 'EUNKNOWN');
    this.fail(code, false, `${code}: ${e.message ?? String(error)}`);
  }

  private fail(code: string, timedOut: boolean, message: string): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.req.destroy();
    this.reject(new PacTransportError({ code, sent: this.sent, phase: this.phase, timedOut, message }));
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
