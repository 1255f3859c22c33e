import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { failOutboxInserts, ingresosWithTransactions } from '@timbra/db/testing';
import { recordDeliveries } from '../src/provider-webhooks/record-webhook.ts';
import { KEYS, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ providers: true });
});
afterAll(() => api.close());

const recent = () => new Date(Date.now() - 60_000).toISOString();
const post = (body: unknown, key?: string) =>
  got.post(`${api.url}/v1/payments`, {
    json: body,
    headers: { authorization: `Bearer ${KEYS.pos}`, ...(key ? { 'idempotency-key': key } : {}) },
    throwHttpErrors: false,
    responseType: 'json',
  });

describe('one transaction per payment (or per batch of payments arriving together)', () => {
  it('leaves nothing behind when it fails after the invoice insert, gives the folio back, and stores no key', async () => {
    // A failure injected after the invoice row is written: the outbox insert raises.
    const restoreOutbox = await failOutboxInserts(api.db.url);
    const before = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const body = { externalId: 'X-1', amount: '100.00', currency: 'MXN', occurredAt: recent() };
    const failed = await post(body, 'atomic-key');
    expect(failed.statusCode).toBe(500);
    expect((failed.body as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'internal',
      message: 'Internal error.',
    });
    expect(JSON.stringify(failed.body)).not.toMatch(/injected|at |\.ts/);
    expect(await api.prisma.payment.count({ where: { externalId: 'X-1' } })).toBe(0);
    expect(await api.prisma.invoice.count()).toBe(0);
    expect(await api.prisma.outboxRow.count()).toBe(0);
    expect(await api.prisma.idempotencyKey.count()).toBe(0);
    expect((await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio).toBe(before.nextFolio);

    await restoreOutbox();
    const retried = await post(body, 'atomic-key');
    expect(retried.statusCode).toBe(201);
    const invoice = await api.prisma.invoice.findFirstOrThrow();
    expect(invoice.folio).toBe(before.nextFolio);
  });

  it('50 concurrent deliveries of one Stripe event → one payment, one invoice, one outbox row', async () => {
    const delivery = stripeDelivery(paymentIntentSucceeded({ id: 'pi_concurrent_1' }));
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        got.post(`${api.url}/webhooks/stripe`, {
          body: delivery.body,
          headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
          throwHttpErrors: false,
        }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
    const payments = await api.prisma.payment.findMany({
      where: { externalId: 'pi_concurrent_1' },
      include: { invoices: { include: { outbox: true } } },
    });
    expect(payments).toHaveLength(1);
    expect(payments[0]!.invoices).toHaveLength(1);
    expect(payments[0]!.invoices[0]!.outbox).toHaveLength(1);
    expect(responses.filter((r) => (JSON.parse(r.body) as { duplicate: boolean }).duplicate)).toHaveLength(49);
  });

  it('200 concurrent distinct payments on one serie → consecutive folios, no gap, no repeat', async () => {
    const start = (await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio;
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        post({ externalId: `C-${i}`, amount: `${10 + i}.00`, currency: 'MXN', occurredAt: recent() }),
      ),
    );
    expect(responses.every((r) => r.statusCode === 201)).toBe(true);
    const folios = (
      await api.prisma.invoice.findMany({ where: { serie: 'A', folio: { gte: start } }, select: { folio: true } })
    )
      .map((i) => i.folio)
      .sort((a, b) => a - b);
    expect(folios).toEqual(Array.from({ length: 200 }, (_, i) => start + i));
  });

  const sendStripe = (delivery: { body: string; signature: string }) =>
    got.post(`${api.url}/webhooks/stripe`, {
      body: delivery.body,
      headers: { 'content-type': 'application/json', 'stripe-signature': delivery.signature },
      throwHttpErrors: false,
    });

  it('a webhook delivery that fails after the invoice insert leaves nothing behind, not even its event: the retry records it', async () => {
    // The webhook path's transaction (the group commit, on node-postgres): the outbox insert raises.
    const restoreOutbox = await failOutboxInserts(api.db.url);
    const before = await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } });
    const delivery = stripeDelivery(paymentIntentSucceeded({ id: 'pi_atomic_webhook' }));
    let failed;
    try {
      failed = await sendStripe(delivery);
    } finally {
      await restoreOutbox();
    }
    expect(failed.statusCode).toBeGreaterThanOrEqual(500);
    expect(await api.prisma.payment.count({ where: { externalId: 'pi_atomic_webhook' } })).toBe(0);
    expect(
      await api.prisma.webhookEvent.count({ where: { eventId: (JSON.parse(delivery.body) as { id: string }).id } }),
    ).toBe(0);
    expect((await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio).toBe(before.nextFolio);

    // Stripe delivers it again: recorded whole, with the folio the failure gave back.
    expect((await sendStripe(delivery)).statusCode).toBe(200);
    const payment = await api.prisma.payment.findFirstOrThrow({
      where: { externalId: 'pi_atomic_webhook' },
      include: { invoices: { include: { outbox: true } } },
    });
    expect(payment.invoices.map((i) => [i.folio, i.outbox.length])).toEqual([[before.nextFolio, 1]]);
  });

  it('200 concurrent Stripe payments share transactions (group commit) and still get consecutive folios', async () => {
    const start = (await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio;
    const ids = Array.from({ length: 200 }, (_, i) => `pi_batch_${i}`);
    const responses = await Promise.all(
      ids.map((id, i) => sendStripe(stripeDelivery(paymentIntentSucceeded({ id, amount: 10_000 + i })))),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(200).fill(200));
    const invoices = await ingresosWithTransactions(api.prisma, 'pi_batch_');
    expect(invoices.map((i) => i.folio)).toEqual(Array.from({ length: 200 }, (_, i) => start + i));
    expect(new Set(invoices.map((i) => i.external_id)).size).toBe(200);
    expect(invoices.every((i) => i.outbox === 1)).toBe(true);
    // Fewer transactions than payments: deliveries arriving together were committed together.
    expect(new Set(invoices.map((i) => i.tx)).size).toBeLessThan(200);
  });

  it('a refund of an unknown payment fails alone (409) among concurrent deliveries; the others commit', async () => {
    // A refund whose payment's events the provider has not delivered yet (held).
    const made = await api.providers.stripePayment({ amount: 116000, deliver: 'hold' });
    const refunded = await api.providers.stripeRefund({
      paymentIntent: made.paymentIntent.id,
      amount: 100,
      deliver: 'hold',
    });
    const chargeRefunded = refunded.events[1]!;
    const payments = Array.from({ length: 30 }, (_, i) =>
      stripeDelivery(paymentIntentSucceeded({ id: `pi_beside_refund_${i}` })),
    );
    // In the middle, so it most likely shares a batch with payments.
    const responses = await Promise.all([
      ...payments.slice(0, 15).map(sendStripe),
      api.providers.deliver(chargeRefunded),
      ...payments.slice(15).map(sendStripe),
    ]);
    const refundDelivery = responses[15] as Awaited<ReturnType<typeof api.providers.deliver>>;
    const paymentResponses = responses.filter((_, i) => i !== 15) as Awaited<ReturnType<typeof sendStripe>>[];
    expect(refundDelivery.attempts[0]!.status).toBe(409);
    expect(paymentResponses.map((r) => r.statusCode)).toEqual(Array(30).fill(200));
    expect(await api.prisma.payment.count({ where: { externalId: { startsWith: 'pi_beside_refund_' } } })).toBe(30);
    expect(await api.prisma.webhookEvent.count({ where: { eventId: chargeRefunded } })).toBe(0);
  });

  it('records a batch set-wise: duplicates inside it, two events of one payment, a refund of a payment in it', async () => {
    const start = (await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio;
    const at = new Date(Date.now() - 60_000);
    const payment = (externalId: string, amount: string) => ({
      provider: 'stripe',
      externalId,
      amount,
      currency: 'MXN',
      occurredAt: at,
      receptor: null,
      description: null,
      formaPago: '04',
    });
    const event = (eventId: string) => ({
      provider: 'stripe',
      eventId,
      type: 't',
      result: 'accepted' as const,
      payload: { id: eventId },
    });
    const fresh = await api.prisma.$transaction((tx) =>
      recordDeliveries(tx, api.payments, [
        { event: event('evt_set_1'), payment: payment('pi_set_1', '116.00') },
        { event: event('evt_set_1'), payment: payment('pi_set_1', '116.00') },
        { event: event('evt_set_2'), payment: payment('pi_set_1', '116.00') },
        { event: event('evt_set_3'), payment: payment('pi_set_2', '232.00') },
        {
          event: event('evt_set_4'),
          refunds: [
            {
              paymentProvider: 'stripe',
              paymentExternalId: 'pi_set_2',
              provider: 'stripe',
              externalId: 're_set_1',
              amount: '10.00',
              occurredAt: at,
            },
          ],
        },
      ]),
    );
    expect(fresh).toEqual([true, false, true, true, true]);
    const rows = await api.prisma.payment.findMany({
      where: { externalId: { in: ['pi_set_1', 'pi_set_2'] } },
      include: { invoices: { include: { outbox: true }, orderBy: { kind: 'desc' } }, refunds: true },
      orderBy: { externalId: 'asc' },
    });
    expect(
      rows.map((p) => [
        p.externalId,
        p.invoices.map((i) => `${i.kind} ${i.serie}-${i.folio} ${i.status} outbox ${i.outbox.length}`),
      ]),
    ).toEqual([
      ['pi_set_1', [`I A-${start} pending outbox 1`]],
      // The refund's Egreso waits for the Ingreso to be stamped (no outbox row yet).
      ['pi_set_2', [`I A-${start + 1} pending outbox 1`, expect.stringMatching(/^E NC-\d+ waiting outbox 0$/)]],
    ]);
    expect(rows[1]!.refunds.map((r) => r.externalId)).toEqual(['re_set_1']);
    expect((await api.prisma.serie.findFirstOrThrow({ where: { serie: 'A' } })).nextFolio).toBe(start + 2);
  });
});
