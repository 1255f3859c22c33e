/**
 * @timbra/client — Timbra's API as a typed client.
 *
 *   const timbra = createTimbra({ baseUrl: 'http://localhost:3000', apiKey: process.env.TIMBRA_KEY! });
 *   const { data, error } = await timbra.POST('/v1/payments', { body: { externalId: 'pos-1', amount: '116.00', … } });
 *
 * The types come from apps/api/openapi.yaml (openapi-typescript, generated at install into
 * src/generated/, never edited); the calls are openapi-fetch's: paths, parameters, bodies and answers
 * are checked by the compiler, and an answer is `{ data }` or `{ error }` by its status.
 *
 * Retries are safe: every POST gets one `Idempotency-Key` for the whole call (unless the caller gives
 * its own), so a payment whose answer was lost is asked again and answered again, never recorded
 * twice. A call is repeated on a lost connection, 429, 5xx, or 409 `idempotency_key_in_use`, when
 * repeating it cannot do the work twice: a GET, PUT or DELETE, or a request with an Idempotency-Key.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, operations, paths, webhooks } from './generated/schema.ts';

export type { components, operations, paths, webhooks };
/** The spec's schemas by name: `Schemas['Payment']`, `Schemas['Invoice']`, … */
export type Schemas = components['schemas'];
export type Timbra = Client<paths>;

/** The API version this client's types describe (openapi.yaml's `info.version`); sent as Timbra-Version. */
export const TIMBRA_API_VERSION = '2026-12-05';

export interface TimbraOptions {
  /** Where the API listens, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`tk_live_…`, `tk_test_…`, or a deployment's own). Sent as a bearer token. */
  apiKey: string;
  /** The API version to be answered in (docs/versioning.md). Default: TIMBRA_API_VERSION, the types'. */
  apiVersion?: string;
  /** Attempts after the first, for a call that may be repeated. Default 2. */
  retries?: number;
  /** The first wait between attempts, doubled each time (at most 5 s). Default 250 ms. `Retry-After` wins. */
  backoffMs?: number;
  /** The fetch to send with (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
}

const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);
const MAX_WAIT_MS = 30_000;

/** A client of one API key. */
export function createTimbra(options: TimbraOptions): Timbra {
  const client = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: {
      authorization: `Bearer ${options.apiKey}`,
      'timbra-version': options.apiVersion ?? TIMBRA_API_VERSION,
    },
    fetch: retrying(options),
  });
  client.use(idempotencyKeys);
  return client;
}

/** One key a logical call: set before openapi-fetch sends, so every retry of it carries the same one. */
const idempotencyKeys: Middleware = {
  onRequest({ request }) {
    if (request.method === 'POST' && new URL(request.url).pathname.startsWith('/v1/')) {
      if (!request.headers.has('idempotency-key')) request.headers.set('Idempotency-Key', randomUUID());
    }
    return request;
  },
};

function repeatable(request: Request): boolean {
  return ['GET', 'HEAD', 'PUT', 'DELETE'].includes(request.method) || request.headers.has('idempotency-key');
}

async function shouldRetry(request: Request, response: Response): Promise<boolean> {
  // 429 is refused before any work: any request may be sent again.
  if (response.status === 429) return true;
  if (!repeatable(request)) return false;
  if (RETRY_STATUSES.has(response.status)) return true;
  if (response.status !== 409) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: string } } | undefined;
  return body?.error?.code === 'idempotency_key_in_use';
}

function waitMs(response: Response | undefined, attempt: number, backoffMs: number): number {
  const after = Number(response?.headers.get('retry-after'));
  if (Number.isFinite(after) && after >= 0) return Math.min(after * 1000, MAX_WAIT_MS);
  return Math.min(backoffMs * 2 ** attempt, 5_000);
}

function retrying(options: TimbraOptions): (request: Request) => Promise<Response> {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const retries = options.retries ?? 2;
  const backoffMs = options.backoffMs ?? 250;
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      // The original is never sent, so its body can be read again for the next attempt.
      const sent = request.clone();
      let response: Response;
      try {
        response = await send(sent);
      } catch (error) {
        if (attempt >= retries || !repeatable(request)) throw error;
        await sleep(waitMs(undefined, attempt, backoffMs));
        continue;
      }
      if (attempt >= retries || !(await shouldRetry(request, response))) return response;
      await response.body?.cancel();
      await sleep(waitMs(response, attempt, backoffMs));
    }
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type WebhookRequest<T extends keyof webhooks> = NonNullable<webhooks[T]['post']>['requestBody'];
type WebhookBodyOf<T extends keyof webhooks> = NonNullable<WebhookRequest<T>>['content']['application/json'];

/**
 * An outbound event as Timbra POSTs it to a webhook endpoint (docs/outbound.md), from the spec's
 * `webhooks:` section: narrowing on `type` gives `data.object` its shape.
 */
export type TimbraEvent = { [T in keyof webhooks]: WebhookBodyOf<T> & { type: T } }[keyof webhooks];

export type WebhookSignatureProblem = 'signature_missing' | 'signature_mismatch' | 'signature_expired';

export class WebhookSignatureError extends Error {
  constructor(readonly code: WebhookSignatureProblem) {
    super(
      {
        signature_missing: 'no Timbra-Signature header, or one without t= and v1=',
        signature_mismatch: 'no v1 of the Timbra-Signature header matches the body with this secret',
        signature_expired: 'the Timbra-Signature timestamp is outside the tolerance (a replay?)',
      }[code],
    );
    this.name = 'WebhookSignatureError';
  }
}

export const SIGNATURE_HEADER = 'Timbra-Signature';

/**
 * Checks a webhook Timbra sent and returns its event. `body` is the request's raw body, exactly as
 * received (not re-serialized JSON); `header` its `Timbra-Signature`
 * (`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, one v1 per secret during a
 * rotation); `secret` the endpoint's (or several, while you rotate). Throws WebhookSignatureError.
 */
export function verifyWebhook(
  body: string | Uint8Array,
  header: string | null | undefined,
  secret: string | readonly string[],
  options: { toleranceSeconds?: number; now?: () => number } = {},
): TimbraEvent {
  const raw = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const pairs = (header ?? '').split(',').map((part) => {
    const at = part.indexOf('=');
    return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
  });
  const t = pairs.find(([k]) => k === 't')?.[1];
  const given = pairs.filter(([k, v]) => k === 'v1' && /^[0-9a-f]{64}$/.test(v)).map(([, v]) => Buffer.from(v, 'hex'));
  if (!t || !/^\d+$/.test(t) || given.length === 0) throw new WebhookSignatureError('signature_missing');
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const matches = secrets.some((s) => {
    const expected = createHmac('sha256', s).update(`${t}.${raw}`, 'utf8').digest();
    return given.some((g) => timingSafeEqual(g, expected));
  });
  if (!matches) throw new WebhookSignatureError('signature_mismatch');
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(now - Number(t)) > (options.toleranceSeconds ?? 300))
    throw new WebhookSignatureError('signature_expired');
  return JSON.parse(raw) as TimbraEvent;
}
