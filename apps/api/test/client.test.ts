import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTimbra } from '@timbra/client';
import { KEYS, startApi, type TestApi } from './helpers.ts';

// @timbra/client against the running API: its types are the spec's (the compiler checks these calls),
// and its retries repeat a lost call with the same Idempotency-Key, so the API records it once.

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const recent = () => new Date(Date.now() - 60_000).toISOString();

describe('@timbra/client', () => {
  it('records a payment, reads it back and finds it in a filtered list', async () => {
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
    // A first call that checks the setup: which key, and whose documents it makes.
    const me = await timbra.GET('/v1/keys/me');
    expect([me.data!.name, me.data!.organization.mode]).toEqual(['pos', 'live']);
    expect(me.data!.organization.id).toBe(api.payments.organizationId);
    const created = await timbra.POST('/v1/payments', {
      body: { externalId: 'C-1', amount: '116.00', currency: 'MXN', occurredAt: recent() },
    });
    expect(created.response.status).toBe(201);
    expect(created.error).toBeUndefined();
    const payment = created.data!;
    expect(payment.amount).toBe('116.00');
    expect(payment.invoices[0]!.status).toBe('pending');

    const read = await timbra.GET('/v1/payments/{id}', { params: { path: { id: payment.id } } });
    expect(read.data!.id).toBe(payment.id);
    const listed = await timbra.GET('/v1/payments', { params: { query: { externalId: 'C-1' } } });
    expect(listed.data!.data.map((p) => p.id)).toEqual([payment.id]);
  });

  it("lists the events a payment made, by the object and by type, in the webhooks' shape", async () => {
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
    const made = await timbra.POST('/v1/payments', {
      body: { externalId: 'C-ev', amount: '58.00', currency: 'MXN', occurredAt: recent() },
    });
    const paymentId = made.data!.id;
    const listed = await timbra.GET('/v1/events', { params: { query: { paymentId } } });
    expect(listed.data!.data.map((e) => e.type)).toEqual(['payment.recorded']);
    const [event] = listed.data!.data;
    expect(event!.data.object).toMatchObject({ id: paymentId, amount: '58.00' });
    expect((await timbra.GET('/v1/events/{id}', { params: { path: { id: event!.id } } })).data).toEqual(event);
    const byType = await timbra.GET('/v1/events', { params: { query: { type: 'payment.recorded', limit: 100 } } });
    expect(byType.data!.data.every((e) => e.type === 'payment.recorded')).toBe(true);
    expect(byType.data!.data.map((e) => e.id)).toContain(event!.id);
    const none = await timbra.GET('/v1/events', { params: { query: { type: 'refund.recorded', paymentId } } });
    expect(none.data!.data).toEqual([]);
    const bad = await timbra.GET('/v1/events', { params: { query: { paymentId: 'nope' } } });
    expect(bad.error!.error).toMatchObject({ code: 'validation_failed', param: 'paymentId' });
  });

  it('answers a refusal as a typed error with its code', async () => {
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos });
    const refused = await timbra.POST('/v1/payments', {
      body: { externalId: 'C-bad', amount: '-1.00', currency: 'MXN', occurredAt: recent() },
    });
    expect(refused.data).toBeUndefined();
    expect(refused.response.status).toBe(422);
    expect(refused.error!.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'validation_failed',
      param: 'amount',
    });
    const unknown = await createTimbra({ baseUrl: api.url, apiKey: 'nobody-0123456789abcdef' }).GET('/v1/payments');
    expect(unknown.response.status).toBe(401);
    expect(unknown.error!.error.type).toBe('authentication_error');
    expect(unknown.error!.error.param).toBeUndefined();
  });

  it('asks again with the same Idempotency-Key when the answer is lost, and the API records the payment once', async () => {
    const keys: (string | null)[] = [];
    let lost = 0;
    // The connection drops after the API answered (it did the work): the caller never sees the answer.
    const droppingOnce = async (request: Request) => {
      keys.push(request.headers.get('idempotency-key'));
      const response = await fetch(request);
      if (lost++ === 0) {
        await response.arrayBuffer();
        throw new TypeError('fetch failed: socket hang up');
      }
      return response;
    };
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos, fetch: droppingOnce, backoffMs: 5 });
    const again = await timbra.POST('/v1/payments', {
      body: { externalId: 'C-lost', amount: '232.00', currency: 'MXN', occurredAt: recent() },
    });
    expect(again.data!.amount).toBe('232.00');
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(await api.prisma.payment.count({ where: { externalId: 'C-lost' } })).toBe(1);
    expect(await api.prisma.invoice.count({ where: { paymentId: again.data!.id } })).toBe(1);

    // Another call is another key; the caller's own key is kept.
    await timbra.POST('/v1/payments', {
      params: { header: { 'Idempotency-Key': 'mine-1' } },
      body: { externalId: 'C-mine', amount: '10.00', currency: 'MXN', occurredAt: recent() },
    });
    expect(keys).toHaveLength(3);
    expect(keys[2]).toBe('mine-1');
  });

  it('does not repeat a call that could do its work twice', async () => {
    let calls = 0;
    const failing = async (request: Request) => {
      calls++;
      await fetch(request).then((r) => r.arrayBuffer());
      throw new TypeError('fetch failed: socket hang up');
    };
    const timbra = createTimbra({ baseUrl: api.url, apiKey: KEYS.pos, fetch: failing, backoffMs: 5 });
    const made = await createTimbra({ baseUrl: api.url, apiKey: KEYS.pos }).POST('/v1/products', {
      body: {
        reference: 'C-P',
        descripcion: 'Taza',
        claveProdServ: '01010101',
        claveUnidad: 'H87',
        unitPrice: '10.00',
      },
    });
    const product = made.data!;
    // A PATCH carries no Idempotency-Key: its answer lost is an error for the caller, not a second change.
    await expect(
      timbra.PATCH('/v1/products/{id}', { params: { path: { id: product.id } }, body: { descripcion: 'Taza grande' } }),
    ).rejects.toThrow(/socket hang up/);
    expect(calls).toBe(1);
    // A GET is repeated: every attempt, then the error.
    calls = 0;
    await expect(timbra.GET('/v1/products/{id}', { params: { path: { id: product.id } } })).rejects.toThrow(/hang up/);
    expect(calls).toBe(3);
  });
});
