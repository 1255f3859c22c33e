import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import got from 'got';
import { KEYS, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
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

describe('one transaction per payment', () => {
  it('leaves nothing behind when it fails after the invoice insert, gives the folio back, and stores no key', async () => {
    // A failure injected after the invoice row is written: the outbox insert raises.
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION fail_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END; $$;
      CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION fail_outbox();`);
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

    await api.prisma.$executeRawUnsafe('DROP TRIGGER fail_outbox ON outbox; DROP FUNCTION fail_outbox();');
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
});
