import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookSignatureError } from '../src/index.ts';

// The verifier's edges, with headers made by docs/outbound.md's recipe. Real deliveries, signed by the
// worker, are verified with it in apps/worker/test/deliveries.test.ts.

const body = JSON.stringify({
  id: 'evt_1',
  type: 'invoice.stamped',
  createdAt: '2026-12-05T10:00:00.000Z',
  data: { object: { id: 'i1' } },
});
const t = 1_780_000_000;
const at = () => t * 1000;
const v1 = (secret: string, payload = body, time = t) =>
  `v1=${createHmac('sha256', secret).update(`${time}.${payload}`).digest('hex')}`;

function problem(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof WebhookSignatureError ? error.code : String(error);
  }
}

describe('verifyWebhook', () => {
  it('returns the event of a body signed with the secret, as a string or as bytes', () => {
    const header = `t=${t},${v1('whsec_a')}`;
    expect(verifyWebhook(body, header, 'whsec_a', { now: at }).type).toBe('invoice.stamped');
    expect(verifyWebhook(Buffer.from(body), header, 'whsec_a', { now: at }).id).toBe('evt_1');
  });

  it("narrows on the event's type to its object's shape, from the spec's webhooks section", () => {
    const event = verifyWebhook(body, `t=${t},${v1('whsec_a')}`, 'whsec_a', { now: at });
    // A compile-time check as much as a run-time one: `uuid` exists only on an invoice's events.
    const uuid = event.type === 'invoice.stamped' ? event.data.object.uuid : 'not an invoice';
    expect(uuid).toBeUndefined();
    const amount = event.type === 'payment.recorded' ? event.data.object.amount : 'not a payment';
    expect(amount).toBe('not a payment');
  });

  it('accepts any v1 that matches any of the secrets given (a rotation, either side)', () => {
    const header = `t=${t},${v1('whsec_new')},${v1('whsec_old')}`;
    expect(verifyWebhook(body, header, 'whsec_old', { now: at }).id).toBe('evt_1');
    expect(verifyWebhook(body, `t=${t},${v1('whsec_new')}`, ['whsec_old', 'whsec_new'], { now: at }).id).toBe('evt_1');
  });

  it('refuses a missing or malformed header, another secret, a changed body, and an old or future timestamp', () => {
    expect(problem(() => verifyWebhook(body, undefined, 'whsec_a', { now: at }))).toBe('signature_missing');
    expect(problem(() => verifyWebhook(body, `t=${t}`, 'whsec_a', { now: at }))).toBe('signature_missing');
    expect(problem(() => verifyWebhook(body, v1('whsec_a'), 'whsec_a', { now: at }))).toBe('signature_missing');
    expect(problem(() => verifyWebhook(body, `t=${t},v1=zz`, 'whsec_a', { now: at }))).toBe('signature_missing');
    expect(problem(() => verifyWebhook(body, `t=${t},${v1('whsec_b')}`, 'whsec_a', { now: at }))).toBe(
      'signature_mismatch',
    );
    expect(
      problem(() => verifyWebhook(body.replace('i1', 'i2'), `t=${t},${v1('whsec_a')}`, 'whsec_a', { now: at })),
    ).toBe('signature_mismatch');
    // The timestamp is signed: moving it breaks the signature; an old signature is a replay.
    expect(problem(() => verifyWebhook(body, `t=${t + 1},${v1('whsec_a')}`, 'whsec_a', { now: at }))).toBe(
      'signature_mismatch',
    );
    const old = `t=${t - 301},${v1('whsec_a', body, t - 301)}`;
    expect(problem(() => verifyWebhook(body, old, 'whsec_a', { now: at }))).toBe('signature_expired');
    expect(verifyWebhook(body, old, 'whsec_a', { now: at, toleranceSeconds: 600 }).id).toBe('evt_1');
    const future = `t=${t + 301},${v1('whsec_a', body, t + 301)}`;
    expect(problem(() => verifyWebhook(body, future, 'whsec_a', { now: at }))).toBe('signature_expired');
  });

  it('never says the secret in its errors', () => {
    try {
      verifyWebhook(body, `t=${t},${v1('whsec_b')}`, 'whsec_secret_value', { now: at });
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('whsec_secret_value');
      return;
    }
    throw new Error('expected a refusal');
  });
});
