import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { retryOnConflict, type PrismaClient, type Tx } from '@timbra/db';
import {
  forgetIdempotentResponse,
  storedIdempotentResponse,
  storeIdempotentResponse,
  tryLockIdempotencyKey,
} from '@timbra/db/keys';
import { ApiError } from './errors.ts';
import type { Metrics } from './metrics.ts';

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

/** The Idempotency-Key header, checked (1–255 printable ASCII characters), or undefined when absent. */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!KEY_FORMAT.test(header)) throw new ApiError('invalid_idempotency_key');
  return header;
}

/** sha256 over method, path and the canonical JSON of the body: what "the same request" means. */
export function fingerprintOf(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method}\n${path}\n${canonicalJson(body)}`)
    .digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export interface StoredResponse {
  status: number;
  body: unknown;
  replayed: boolean;
}

/**
 * Runs a creating request under an Idempotency-Key, inside the transaction `tx` that also writes its
 * effect, so the stored response and the effect commit together (or neither does: a 5xx rolls both
 * back and the key stays free).
 *
 * - A transaction-scoped advisory lock on (client, key) tells a concurrent duplicate apart: it gets
 *   409 `idempotency_key_in_use` with Retry-After instead of waiting.
 * - A stored record with the same fingerprint is replayed; with another, 409 `idempotency_key_reused`.
 * - Records expire after `ttlHours`; an expired one is replaced.
 * Only 2xx responses are stored: a 4xx stored for a malformed body would forbid fixing it.
 */
export async function withIdempotency(
  tx: Tx,
  key: { clientId: string; key: string; fingerprint: string; ttlHours: number },
  run: () => Promise<{ status: number; body: unknown }>,
): Promise<StoredResponse> {
  if (!(await tryLockIdempotencyKey(tx, key.clientId, key.key)))
    throw new ApiError('idempotency_key_in_use', undefined, undefined, { 'Retry-After': '1' });

  const existing = await storedIdempotentResponse(tx, key.clientId, key.key);
  if (existing && existing.expiresAt > new Date()) {
    if (existing.fingerprint !== key.fingerprint) throw new ApiError('idempotency_key_reused');
    return { status: existing.responseStatus, body: existing.responseBody, replayed: true };
  }
  if (existing) await forgetIdempotentResponse(tx, existing.id);

  const response = await run();
  if (response.status >= 200 && response.status < 300) {
    await storeIdempotentResponse(tx, { ...key, status: response.status, body: response.body });
  }
  return { ...response, replayed: false };
}

/**
 * A creating POST's answer, made once: `create` runs in one transaction with the request's
 * Idempotency-Key (when given); a retry with the same key gets the first answer
 * (`Idempotent-Replayed: true`) without running `create` again.
 */
export function idempotentResponder(deps: { prisma: PrismaClient; idempotencyTtlHours: number; metrics: Metrics }) {
  return async (
    req: Request,
    res: Response,
    path: string,
    input: unknown,
    create: (tx: Tx) => Promise<{ status: number; body: unknown }>,
  ): Promise<void> => {
    const key = idempotencyKeyOf(req.get('idempotency-key'));
    // A deadlock or serialization failure rolled everything back, the key too: run it again.
    const result = await retryOnConflict(() =>
      deps.prisma.$transaction(
        async (tx) => {
          if (!key) return { ...(await create(tx)), replayed: false };
          return withIdempotency(
            tx,
            {
              clientId: req.client!.id,
              key,
              fingerprint: fingerprintOf(req.method, path, input),
              ttlHours: deps.idempotencyTtlHours,
            },
            () => create(tx),
          );
        },
        { maxWait: 10_000, timeout: 20_000 },
      ),
    );
    if (result.replayed) {
      deps.metrics.idempotentReplays.inc();
      res.set('Idempotent-Replayed', 'true');
    }
    res.status(result.status).json(result.body);
  };
}
