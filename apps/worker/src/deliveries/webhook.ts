/**
 * Outbound webhooks to the merchant. Each delivery POSTs the event as JSON, signed like Stripe's:
 *
 *   Timbra-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<raw body>")>
 *
 * The body is the same bytes on every attempt (the event's id dedupes it); `t` is the attempt's
 * time, so a receiver refuses old replays of a captured request. docs/webhooks.md shows a receiver.
 */
import { createHmac } from 'node:crypto';
import type { ClaimedDelivery } from '@timbra/db';

export const SIGNATURE_HEADER = 'Timbra-Signature';

/** The event as its receivers see it: the same bytes on every attempt. */
export function webhookBody(event: ClaimedDelivery['event']): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    createdAt: event.createdAt.toISOString(),
    data: { object: event.data },
  });
}

/**
 * `t=…,v1=…` for `body` sent at `timestamp` (unix seconds): one `v1` per secret — the endpoint's, and
 * during a rotation's grace period the previous one too (a receiver accepts any `v1` that matches).
 */
export function signWebhook(secrets: string | readonly string[], timestamp: number, body: string): string {
  const v1s = (typeof secrets === 'string' ? [secrets] : secrets).map(
    (secret) => `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`,
  );
  return `t=${timestamp},${v1s.join(',')}`;
}

export type SendResult = { ok: true; statusCode: number } | { ok: false; statusCode?: number; error: string };

/**
 * POSTs one delivery. A 2xx is delivered; anything else (another status, a timeout, a refused
 * connection) is a failure to retry. Redirects are not followed (the merchant registers the final URL).
 */
export async function sendWebhook(
  delivery: ClaimedDelivery & { endpoint: NonNullable<ClaimedDelivery['endpoint']> },
  options: { timeoutMs: number; now?: () => number },
): Promise<SendResult> {
  const body = webhookBody(delivery.event);
  const timestamp = Math.floor((options.now ?? Date.now)() / 1000);
  try {
    const response = await fetch(delivery.endpoint.url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Timbra-Webhooks/1',
        [SIGNATURE_HEADER]: signWebhook(
          [delivery.endpoint.secret, ...(delivery.endpoint.previousSecret ? [delivery.endpoint.previousSecret] : [])],
          timestamp,
          body,
        ),
        'Timbra-Event-Id': delivery.event.id,
        'Timbra-Event-Type': delivery.event.type,
        'Timbra-Delivery-Id': delivery.id,
      },
      signal: AbortSignal.timeout(options.timeoutMs),
      redirect: 'manual',
    });
    // The answer's body is not read beyond what arrived: a receiver's page is not our business.
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 200 && response.status < 300) return { ok: true, statusCode: response.status };
    return { ok: false, statusCode: response.status, error: `HTTP ${response.status}` };
  } catch (error) {
    const e = error as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError') return { ok: false, error: `ETIMEDOUT: no answer within ${options.timeoutMs} ms` };
    return { ok: false, error: e.cause?.code ? `${e.cause.code}: ${e.cause.message ?? e.message}` : e.message };
  }
}
