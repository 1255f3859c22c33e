import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import got from 'got';
import { MP_SECRET, paymentIntentSucceeded, startApi, stripeDelivery, type TestApi } from './helpers.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const sendStripe = (body: string, signature: string) =>
  got.post(`${api.url}/webhooks/stripe`, {
    body,
    headers: { 'content-type': 'application/json', 'stripe-signature': signature },
    throwHttpErrors: false,
  });

describe('Stripe webhooks', () => {
  it('accepts a signed payment_intent.succeeded: payment + Ingreso, receptor from metadata', async () => {
    const event = paymentIntentSucceeded({
      id: 'pi_meta_1',
      amount: 232000,
      metadata: {
        rfc: 'CACX7605101P8',
        razon_social: 'XOCHILT CASAS CHAVEZ',
        regimen_fiscal: '612',
        codigo_postal: '36257',
        uso_cfdi: 'G03',
      },
    });
    const { body, signature } = stripeDelivery(event);
    const res = await sendStripe(body, signature);
    expect(res.statusCode).toBe(200);
    const payment = await api.prisma.payment.findFirstOrThrow({
      where: { externalId: 'pi_meta_1' },
      include: { invoices: true },
    });
    expect(payment.amount.toFixed(2)).toBe('2320.00');
    expect(payment.invoices[0]!.frozenXml).toContain('Rfc="CACX7605101P8"');
    expect(payment.invoices[0]!.fecha).toBeTruthy();
  });

  it('answers a redelivery 200 with nothing new', async () => {
    const { body, signature } = stripeDelivery(paymentIntentSucceeded({ id: 'pi_dup_1' }));
    await sendStripe(body, signature);
    const again = await sendStripe(body, signature);
    expect(again.statusCode).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ duplicate: true });
    expect(await api.prisma.invoice.count({ where: { payment: { externalId: 'pi_dup_1' } } })).toBe(1);
  });

  it.each([
    [
      'a tampered body',
      (d: { body: string; signature: string }) => ({ body: d.body.replace('116000', '1'), signature: d.signature }),
    ],
    [
      'another secret',
      () => stripeDelivery(paymentIntentSucceeded({ id: 'pi_bad_2' }), { secret: 'whsec_someone_else' }),
    ],
    [
      'a stale timestamp',
      () =>
        stripeDelivery(paymentIntentSucceeded({ id: 'pi_bad_3' }), { timestamp: Math.floor(Date.now() / 1000) - 3600 }),
    ],
    ['no signature', (d: { body: string }) => ({ body: d.body, signature: '' })],
  ])('refuses %s with 401 and stores nothing', async (_name, make) => {
    const before = await api.prisma.webhookEvent.count();
    const d = make(stripeDelivery(paymentIntentSucceeded({ id: 'pi_bad_1' })));
    const res = await sendStripe(d.body, d.signature);
    expect(res.statusCode).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 'invalid_signature' } });
    expect(await api.prisma.webhookEvent.count()).toBe(before);
  });

  it('records unhandled event types as ignored (200)', async () => {
    const { body, signature } = stripeDelivery({
      id: 'evt_customer_1',
      object: 'event',
      type: 'customer.created',
      created: 1,
      data: { object: { id: 'cus_1' } },
    });
    expect((await sendStripe(body, signature)).statusCode).toBe(200);
    expect(await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: 'evt_customer_1' } })).toMatchObject({
      result: 'ignored',
    });
  });

  it('refuses a refund of an unknown payment with 409 (redelivered later), records it once the payment exists', async () => {
    const refundEvent = {
      id: 'evt_refund_1',
      object: 'event',
      type: 'charge.refunded',
      created: Math.floor(Date.now() / 1000),
      data: {
        object: {
          id: 'ch_1',
          object: 'charge',
          payment_intent: 'pi_refund_1',
          currency: 'mxn',
          amount: 116000,
          refunds: { data: [{ id: 're_1', amount: 50000, created: Math.floor(Date.now() / 1000) }] },
        },
      },
    };
    const early = stripeDelivery(refundEvent);
    const res = await sendStripe(early.body, early.signature);
    expect(res.statusCode).toBe(409);
    expect(await api.prisma.webhookEvent.count({ where: { eventId: 'evt_refund_1' } })).toBe(0);
    const pay = stripeDelivery(paymentIntentSucceeded({ id: 'pi_refund_1' }));
    await sendStripe(pay.body, pay.signature);
    const later = stripeDelivery(refundEvent);
    expect((await sendStripe(later.body, later.signature)).statusCode).toBe(200);
    const refund = await api.prisma.refund.findFirstOrThrow({ where: { externalId: 're_1' } });
    expect(refund.amount.toFixed(2)).toBe('500.00');
  });

  it('maps charge.succeeded to the same payment as its PaymentIntent', async () => {
    const pi = stripeDelivery(paymentIntentSucceeded({ id: 'pi_both_1' }));
    await sendStripe(pi.body, pi.signature);
    const charge = stripeDelivery({
      id: 'evt_charge_both_1',
      object: 'event',
      type: 'charge.succeeded',
      created: Math.floor(Date.now() / 1000) - 30,
      data: {
        object: {
          id: 'ch_both_1',
          object: 'charge',
          payment_intent: 'pi_both_1',
          currency: 'mxn',
          amount: 116000,
          amount_captured: 116000,
          metadata: {},
        },
      },
    });
    expect((await sendStripe(charge.body, charge.signature)).statusCode).toBe(200);
    expect(await api.prisma.invoice.count({ where: { payment: { externalId: 'pi_both_1' } } })).toBe(1);
  });
});

function mpSign(dataId: string, requestId: string, ts = Math.floor(Date.now() / 1000), secret = MP_SECRET): string {
  const manifest = `id:${dataId.toLowerCase()};request-id:${requestId};ts:${ts};`;
  return `ts=${ts},v1=${createHmac('sha256', secret).update(manifest).digest('hex')}`;
}

function mpNotification(paymentId: string, notificationId: number, status = 'approved') {
  return {
    id: notificationId,
    live_mode: false,
    type: 'payment',
    action: 'payment.updated',
    data: {
      id: paymentId,
      status,
      transaction_amount: 580.5,
      currency_id: 'MXN',
      date_approved: new Date(Date.now() - 120_000).toISOString(),
      payment_type_id: 'debit_card',
      description: 'Libros',
      metadata: {},
    },
  };
}

const sendMp = (body: object, signature: string, requestId: string, dataId: string) =>
  got.post(`${api.url}/webhooks/mercadopago`, {
    json: body,
    searchParams: { 'data.id': dataId, type: 'payment' },
    headers: { 'x-signature': signature, 'x-request-id': requestId },
    throwHttpErrors: false,
  });

describe('Mercado Pago webhooks', () => {
  it('accepts a signed approved payment: payment + Ingreso with FormaPago from the payment type', async () => {
    const res = await sendMp(mpNotification('9001', 1), mpSign('9001', 'req-1'), 'req-1', '9001');
    expect(res.statusCode).toBe(200);
    const payment = await api.prisma.payment.findFirstOrThrow({
      where: { provider: 'mercadopago', externalId: '9001' },
      include: { invoices: true },
    });
    expect(payment.amount.toFixed(2)).toBe('580.50');
    expect(payment.invoices[0]!.frozenXml).toContain('FormaPago="28"');
  });

  it('maps metadata as for Stripe: payment_terms installments → a PPD Ingreso; invoice_id → an installment and its Pago', async () => {
    const customer = {
      rfc: 'CACX7605101P8',
      razon_social: 'XOCHILT CASAS CHAVEZ',
      regimen_fiscal: '612',
      codigo_postal: '36257',
      uso_cfdi: 'G03',
    };
    const withData = (n: ReturnType<typeof mpNotification>, data: object) => ({ ...n, data: { ...n.data, ...data } });
    const sale = withData(mpNotification('9101', 101), {
      transaction_amount: 2320,
      metadata: { ...customer, payment_terms: 'installments' },
    });
    expect((await sendMp(sale, mpSign('9101', 'req-101'), 'req-101', '9101')).statusCode).toBe(200);
    const ingreso = await api.prisma.invoice.findFirstOrThrow({ where: { payment: { externalId: '9101' } } });
    expect(ingreso.frozenXml).toContain('MetodoPago="PPD"');

    const paid = withData(mpNotification('9102', 102), {
      transaction_amount: 1160,
      metadata: { invoice_id: ingreso.id },
    });
    expect((await sendMp(paid, mpSign('9102', 'req-102'), 'req-102', '9102')).statusCode).toBe(200);
    const installment = await api.prisma.installment.findFirstOrThrow({
      where: { provider: 'mercadopago', externalId: '9102' },
      include: { pago: true },
    });
    expect(installment).toMatchObject({ invoiceId: ingreso.id, numParcialidad: 1, formaPago: '28' });
    expect(installment.pago?.kind).toBe('P');
    expect(await api.prisma.payment.count({ where: { externalId: '9102' } })).toBe(0);
  });

  it('answers a repeated notification 200 with nothing new, and ignores a pending payment', async () => {
    await sendMp(mpNotification('9002', 2), mpSign('9002', 'req-2'), 'req-2', '9002');
    const again = await sendMp(mpNotification('9002', 2), mpSign('9002', 'req-2b'), 'req-2b', '9002');
    expect(JSON.parse(again.body)).toMatchObject({ duplicate: true });
    const pending = await sendMp(mpNotification('9003', 3, 'pending'), mpSign('9003', 'req-3'), 'req-3', '9003');
    expect(pending.statusCode).toBe(200);
    expect(await api.prisma.payment.count({ where: { externalId: '9003' } })).toBe(0);
  });

  it.each([
    // Its first hex digit changed (to another digit: replacing a 0 with a 0 would not tamper).
    [
      'a tampered signature',
      () => mpSign('9004', 'req-4').replace(/v1=(.)/, (_, c: string) => `v1=${c === '0' ? '1' : '0'}`),
    ],
    ['another secret', () => mpSign('9004', 'req-4', undefined, 'not-the-secret')],
    ['a stale timestamp', () => mpSign('9004', 'req-4', Math.floor(Date.now() / 1000) - 3600)],
    ['a signature for another request id', () => mpSign('9004', 'req-other')],
    ['no signature', () => ''],
  ])('refuses %s with 401 and stores nothing', async (_name, signature) => {
    const before = await api.prisma.webhookEvent.count();
    const res = await sendMp(mpNotification('9004', 4), signature(), 'req-4', '9004');
    expect(res.statusCode).toBe(401);
    expect(await api.prisma.webhookEvent.count()).toBe(before);
  });

  it('refuses a tampered body whose data.id differs from the signed one', async () => {
    const res = await sendMp(mpNotification('9005', 5), mpSign('9006', 'req-5'), 'req-5', '9005');
    expect(res.statusCode).toBe(401);
  });
});
