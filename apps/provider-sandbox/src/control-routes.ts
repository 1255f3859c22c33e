/**
 * The sandbox's control API under `/_sandbox`: make payments, captures and refunds happen at Stripe
 * and Mercado Pago (each sends its signed webhooks now, or holds them for the caller to deliver in
 * any order, again, or late), set Banxico's rates, see every delivery attempt, and replay a captured
 * Mercado Pago notification with another body. README.md of this app lists each call.
 */
import { Router } from 'express';
import { z } from 'zod';
import type { BanxicoFake } from './banxico-fake.ts';
import type { Deliveries } from './deliveries.ts';
import { MP_PAYMENT_TYPES, type FakeMpNotification, type MercadoPagoFake } from './mercadopago-fake.ts';
import { FakeError } from './stripe-objects.ts';
import type { StripeFake } from './stripe-fake.ts';
import { STRIPE_METHODS, type FakeEvent } from './stripe-types.ts';

/** What the control calls act on: the fakes, the deliveries, and how each provider sends its events. */
export interface SandboxControl {
  stripe: StripeFake;
  mercadoPago: MercadoPagoFake;
  banxico: BanxicoFake;
  deliveries: Deliveries;
  /** The headers of each Mercado Pago notification's last send: what an eavesdropper would capture. */
  mpHeaders: ReadonlyMap<string, { url: string; headers: Record<string, string> }>;
  sendStripe(events: FakeEvent[], deliver: 'now' | 'hold'): Promise<string[]>;
  sendMercadoPago(notification: FakeMpNotification, deliver: 'now' | 'hold'): Promise<string[]>;
}

const deliverOption = z.enum(['now', 'hold']).default('now');
const metadata = z.record(z.string(), z.string()).default({});

const stripePaymentBody = z.object({
  amount: z.number().int(),
  currency: z.string().default('mxn'),
  method: z.enum(STRIPE_METHODS).default('card_credit'),
  capture: z.enum(['automatic', 'manual']).default('automatic'),
  metadata,
  description: z.string().nullable().default(null),
  created: z.number().int().optional(),
  customer: z.string().optional(),
  receiptEmail: z.string().optional(),
  settlementExchangeRate: z.number().positive().optional(),
  /** Stripe Connect: made on this connected account. */
  account: z
    .string()
    .regex(/^acct_[A-Za-z0-9]+$/)
    .optional(),
  livemode: z.boolean().optional(),
  deliver: deliverOption,
});
const checkoutBody = z.object({
  currency: z.string().default('mxn'),
  method: z.enum(STRIPE_METHODS).default('card_credit'),
  metadata,
  description: z.string().nullable().default(null),
  customer: z.string().optional(),
  receiptEmail: z.string().optional(),
  settlementExchangeRate: z.number().positive().optional(),
  lines: z
    .array(
      z.object({
        name: z.string().min(1),
        quantity: z.number().int().positive().default(1),
        unitAmount: z.number().int().positive(),
        metadata,
      }),
    )
    .min(1),
  deliver: deliverOption,
});
const captureBody = z.object({ amount: z.number().int().optional(), deliver: deliverOption });
const refundBody = z.object({
  paymentIntent: z.string().optional(),
  charge: z.string().optional(),
  amount: z.number().int().optional(),
  status: z.enum(['succeeded', 'pending', 'failed']).default('succeeded'),
  deliver: deliverOption,
});
const refundUpdateBody = z.object({ status: z.enum(['succeeded', 'failed', 'canceled']), deliver: deliverOption });
const mpPaymentBody = z.object({
  amount: z.number(),
  currency: z.string().default('MXN'),
  paymentType: z.enum(MP_PAYMENT_TYPES).default('credit_card'),
  status: z.enum(['approved', 'pending', 'rejected']).default('approved'),
  metadata: z.record(z.string(), z.unknown()).default({}),
  description: z.string().nullable().default(null),
  items: z
    .array(
      z.object({ id: z.string(), title: z.string(), quantity: z.number().int().positive(), unit_price: z.number() }),
    )
    .optional(),
  payerId: z.string().optional(),
  payerEmail: z.string().optional(),
  deliver: deliverOption,
});
const mpRefundBody = z.object({ amount: z.number().optional(), deliver: deliverOption });
const replayBody = z.object({ body: z.unknown() });
const banxicoRateBody = z.object({
  serie: z.string().default('SF43718'),
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  dato: z.string().regex(/^(\d+(\.\d+)?|N\/E)$/),
});

/** The router to mount at `/_sandbox`. */
export function controlRouter(c: SandboxControl): Router {
  const router = Router();
  router.post('/banxico/rates', (req, res) => {
    const { serie, date, dato } = banxicoRateBody.parse(req.body);
    c.banxico.set(serie, date, dato);
    res.status(201).json({ serie, date, dato });
  });
  router.get('/health', (_req, res) => res.json({ ok: true }));
  router.get('/deliveries', (_req, res) => res.json({ deliveries: c.deliveries.list() }));
  router.get('/deliveries/:id', (req, res) => {
    const record = c.deliveries.get(String(req.params.id));
    if (!record) throw new FakeError(404, 'not_found', 'no such event');
    res.json(record);
  });
  router.post('/events/:id/deliver', async (req, res) => {
    const sending = c.deliveries.redeliver(String(req.params.id));
    if (!sending) throw new FakeError(404, 'not_found', 'no such event');
    await sending;
    res.json(c.deliveries.get(String(req.params.id)));
  });
  router.post('/stripe/payments', async (req, res) => {
    const { deliver, ...input } = stripePaymentBody.parse(req.body);
    const made = c.stripe.createPayment(input);
    res.status(201).json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/stripe/checkout_sessions', async (req, res) => {
    const { deliver, ...input } = checkoutBody.parse(req.body);
    const made = c.stripe.createCheckoutSession(input);
    res.status(201).json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/stripe/invoices', async (req, res) => {
    const { deliver, ...input } = checkoutBody.parse(req.body);
    const made = c.stripe.createInvoice(input);
    res.status(201).json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/stripe/payment_intents/:id/capture', async (req, res) => {
    const { amount, deliver } = captureBody.parse(req.body ?? {});
    const made = c.stripe.capture(String(req.params.id), amount);
    res.json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/stripe/refunds', async (req, res) => {
    const { deliver, ...input } = refundBody.parse(req.body);
    const made = c.stripe.refund(input);
    res.status(201).json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/stripe/refunds/:id', async (req, res) => {
    const { status, deliver } = refundUpdateBody.parse(req.body);
    const made = c.stripe.updateRefund(String(req.params.id), status);
    res.json({ ...made, events: await c.sendStripe(made.events, deliver) });
  });
  router.post('/mercadopago/payments', async (req, res) => {
    const { deliver, ...input } = mpPaymentBody.parse(req.body);
    const made = c.mercadoPago.createPayment(input);
    res.status(201).json({ ...made, events: await c.sendMercadoPago(made.notification, deliver) });
  });
  router.post('/mercadopago/payments/:id/approve', async (req, res) => {
    const { deliver } = z.object({ deliver: deliverOption }).parse(req.body ?? {});
    const made = c.mercadoPago.approve(String(req.params.id));
    res.json({ ...made, events: await c.sendMercadoPago(made.notification, deliver) });
  });
  router.post('/mercadopago/payments/:id/refunds', async (req, res) => {
    const { amount, deliver } = mpRefundBody.parse(req.body ?? {});
    const made = c.mercadoPago.refund(String(req.params.id), amount);
    res.status(201).json({ ...made, events: await c.sendMercadoPago(made.notification, deliver) });
  });
  // The attack a signature must withstand: a captured notification's exact headers, another body.
  router.post('/mercadopago/notifications/:id/replay', async (req, res) => {
    const { body } = replayBody.parse(req.body);
    const captured = c.mpHeaders.get(String(req.params.id));
    if (!captured) throw new FakeError(404, 'not_found', 'no notification with that id was sent');
    const answer = await fetch(captured.url, {
      method: 'POST',
      headers: captured.headers,
      body: JSON.stringify(body),
    });
    res.json({ status: answer.status, body: await answer.text() });
  });
  return router;
}
