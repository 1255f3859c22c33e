/**
 * Outbound webhooks to the merchant. Each delivery POSTs the event as JSON, signed like Stripe's:
 *
 *   Timbra-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(endpoint secret, "<t>.<raw body>")>
 *
 * The body is the same bytes on every attempt (the event's id dedupes it); `t` is the attempt's
 * time, so a receiver refuses old replays of a captured request. docs/webhooks.md shows a receiver.
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ClaimedDelivery, publicOnlyAgents } from '@timbra/db/deliveries';

export const SIGNATURE_HEADER = 'Timbra-Signature';

/** The event as its receivers see it: the same bytes on every attempt. */
export function webhookBody(event: ClaimedDelivery['event']): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    createdAt: event.createdAt.toISOString(),
    apiVersion: event.apiVersion,
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

/** The agents a delivery connects through: only to public (or allowlisted) addresses (publicOnlyAgents). */
export type DeliveryAgents = ReturnType<typeof publicOnlyAgents>;

/**
 * POSTs one delivery. A 2xx is delivered; anything else (another status, a timeout, a refused
 * connection, an address that is not public) is a failure to retry. Redirects are not followed (the
 * merchant registers the final URL). The answer's body is not read: a receiver's page is not ours,
 * and a refused address is said the same whatever listens there, so the log reveals no port.
 */
export async function sendWebhook(
  delivery: ClaimedDelivery & { endpoint: NonNullable<ClaimedDelivery['endpoint']> },
  options: { timeoutMs: number; agents: DeliveryAgents; now?: () => number },
): Promise<SendResult> {
  const body = webhookBody(delivery.event);
  const timestamp = Math.floor((options.now ?? Date.now)() / 1000);
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'Timbra-Webhooks/1',
    [SIGNATURE_HEADER]: signWebhook(
      [delivery.endpoint.secret, ...(delivery.endpoint.previousSecret ? [delivery.endpoint.previousSecret] : [])],
      timestamp,
      body,
    ),
    'Timbra-Event-Id': delivery.event.id,
    'Timbra-Event-Type': delivery.event.type,
    'Timbra-Delivery-Id': delivery.id,
  };
  try {
    const status = await post(delivery.endpoint.url, body, headers, options);
    if (status >= 200 && status < 300) return { ok: true, statusCode: status };
    return { ok: false, statusCode: status, error: `HTTP ${status}` };
  } catch (error) {
    const e = error as Error & { code?: string };
    if (ADDRESS_REFUSED.test(e.message))
      return {
        ok: false,
        error: 'ADDRESS_NOT_ALLOWED: the endpoint is not at a public address (WEBHOOK_ALLOWED_ADDRESSES)',
      };
    return { ok: false, error: e.code ? `${e.code}: ${e.message}` : e.message };
  }
}

/** How request-filtering-agent says it refused an address (its errors carry no code). */
const ADDRESS_REFUSED = /is not allowed\. Because/;

/** One POST through the agents; resolves with the status as soon as the answer's head arrives. */
function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs: number; agents: DeliveryAgents },
): Promise<number> {
  const target = new URL(url);
  const https = target.protocol === 'https:';
  return new Promise<number>((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      target,
      { method: 'POST', headers, agent: https ? options.agents.https : options.agents.http },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error(`no answer within ${options.timeoutMs} ms`), { code: 'ETIMEDOUT' })),
      options.timeoutMs,
    );
    req.on('error', reject);
    req.on('close', () => clearTimeout(timer));
    req.end(body);
  });
}
