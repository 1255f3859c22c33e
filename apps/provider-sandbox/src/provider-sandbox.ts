/**
 * The provider sandbox's HTTP face, on one port:
 *
 * - `/v1/…` — Stripe's API (the read endpoints Timbra calls), Bearer the configured secret key;
 * - `/mercadopago/v1/payments/{id}` — Mercado Pago's API, Bearer the configured access token (point
 *   the SDK's base URL at `<sandbox>/mercadopago`);
 * - `/_sandbox/…` — the control API: make payments, captures and refunds happen (each sends its
 *   signed webhooks, or holds them for the caller to deliver in any order, again, or late), and see
 *   every delivery attempt. README.md of this app lists each call.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import Stripe from 'stripe';
import { z } from 'zod';
import { BanxicoFake } from './banxico-fake.ts';
import { Deliveries } from './deliveries.ts';
import {
  MercadoPagoFake,
  MP_PAYMENT_TYPES,
  mercadoPagoSignature,
  newRequestId,
  type FakeMpNotification,
} from './mercadopago-fake.ts';
import { FakeError, STRIPE_METHODS, StripeFake, type FakeEvent } from './stripe-fake.ts';

export interface ProviderSandboxOptions {
  host: string;
  port: number;
  stripe: { secretKey: string; webhookUrl: string | undefined; webhookSecret: string };
  mercadoPago: { accessToken: string; webhookUrl: string | undefined; webhookSecret: string };
  /** The token Banxico SIE callers must send (`Bmx-Token`): Timbra's BANXICO_TOKEN. */
  banxico: { token: string };
  /** Waits between a failed delivery and its retries. */
  retryDelaysMs: readonly number[];
  logger: Logger;
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

export class ProviderSandbox {
  readonly stripe = new StripeFake();
  readonly mercadoPago = new MercadoPagoFake();
  readonly banxico = new BanxicoFake();
  private readonly deliveries: Deliveries;
  private readonly signer = new Stripe('sk_sandbox_signing_only');
  /** The headers of each Mercado Pago notification's last send: what an eavesdropper would capture. */
  private readonly mpHeaders = new Map<string, { url: string; headers: Record<string, string> }>();
  private server: Server | undefined;

  constructor(private readonly options: ProviderSandboxOptions) {
    this.deliveries = new Deliveries(options.retryDelaysMs, options.logger);
  }

  async start(): Promise<number> {
    const app = this.app();
    const server = app.listen(this.options.port, this.options.host);
    // Longer than any client's idle keep-alive (Node's fetch: 4 s): the server never closes a socket
    // a client is about to reuse, which under load surfaces as "other side closed" on a new request.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    this.server = server;
    return (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await this.deliveries.stop();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private app() {
    const app = express();
    app.disable('x-powered-by');
    app.use(express.json({ limit: '1mb' }));
    // For container healthchecks: the process is up and serving.
    app.get('/healthz', (_req, res) => {
      res.json({ ok: true });
    });

    // Stripe's API.
    const stripeAuth = bearer(this.options.stripe.secretKey, () => ({
      error: { type: 'invalid_request_error', message: 'Invalid API Key provided' },
    }));
    app.get('/v1/charges/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.charges.get(String(req.params.id)), 'charge', req.params.id));
    });
    app.get('/v1/payment_intents/:id', stripeAuth, (req, res) => {
      const pi = found(this.stripe.paymentIntents.get(String(req.params.id)), 'payment_intent', req.params.id);
      // stripe-node sends `expand[0]=latest_charge`; curl users `expand[]=…`.
      const expand = Object.entries(req.query).flatMap(([k, v]) => (/^expand(\[\d*\])?$/.test(k) ? [v].flat() : []));
      res.json(
        expand.includes('latest_charge')
          ? { ...pi, latest_charge: this.stripe.charges.get(pi.latest_charge as string) }
          : pi,
      );
    });
    app.get('/v1/balance_transactions/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.balanceTransactions.get(String(req.params.id)), 'balance_transaction', req.params.id));
    });
    app.get('/v1/checkout/sessions', stripeAuth, (req, res) => {
      const pi = req.query.payment_intent;
      const data = [...this.stripe.checkoutSessions.values()].filter(
        (s) => pi === undefined || s.payment_intent === pi,
      );
      res.json({ object: 'list', data, has_more: false, url: '/v1/checkout/sessions' });
    });
    app.get('/v1/checkout/sessions/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.checkoutSessions.get(String(req.params.id)), 'checkout.session', req.params.id));
    });
    app.get('/v1/checkout/sessions/:id/line_items', stripeAuth, (req, res) => {
      const items = found(this.stripe.lineItems.get(String(req.params.id)), 'checkout.session', req.params.id);
      const expand = Object.entries(req.query).flatMap(([k, v]) => (/^expand(\[\d*\])?$/.test(k) ? [v].flat() : []));
      const data = expand.includes('data.price.product')
        ? items.map((item) => ({
            ...item,
            price: { ...item.price, product: this.stripe.products.get(item.price.product) },
          }))
        : items;
      res.json({
        object: 'list',
        data,
        has_more: false,
        url: `/v1/checkout/sessions/${String(req.params.id)}/line_items`,
      });
    });
    app.get('/v1/invoice_payments', stripeAuth, (req, res) => {
      // stripe-node sends `payment[type]=…&payment[payment_intent]=…` (kept as flat keys by Express 5).
      const pi = req.query['payment[payment_intent]'];
      const invoice = req.query.invoice;
      const data = [...this.stripe.invoicePayments.values()].filter(
        (p) =>
          (pi === undefined || p.payment.payment_intent === pi) && (invoice === undefined || p.invoice === invoice),
      );
      res.json({ object: 'list', data, has_more: false, url: '/v1/invoice_payments' });
    });
    app.get('/v1/invoices/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.invoices.get(String(req.params.id)), 'invoice', req.params.id));
    });
    app.get('/v1/invoices/:id/lines', stripeAuth, (req, res) => {
      const data = found(this.stripe.invoiceLines.get(String(req.params.id)), 'invoice', req.params.id);
      res.json({ object: 'list', data, has_more: false, url: `/v1/invoices/${String(req.params.id)}/lines` });
    });
    app.get('/v1/products/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.products.get(String(req.params.id)), 'product', req.params.id));
    });
    app.get('/v1/refunds/:id', stripeAuth, (req, res) => {
      res.json(found(this.stripe.refunds.get(String(req.params.id)), 'refund', req.params.id));
    });
    app.get('/v1/refunds', stripeAuth, (req, res) => {
      const { charge, payment_intent: pi } = req.query;
      const data = [...this.stripe.refunds.values()]
        .filter((r) => (charge === undefined || r.charge === charge) && (pi === undefined || r.payment_intent === pi))
        .sort((a, b) => b.created - a.created);
      // Newest first, pages of `limit` after `starting_after` (how the library's auto-pagination asks).
      const after = typeof req.query.starting_after === 'string' ? req.query.starting_after : undefined;
      const rest = after === undefined ? data : data.slice(data.findIndex((r) => r.id === after) + 1);
      const limit = Math.min(Number(req.query.limit ?? 10) || 10, 100);
      res.json({ object: 'list', data: rest.slice(0, limit), has_more: rest.length > limit, url: '/v1/refunds' });
    });

    // Mercado Pago's API.
    const mpAuth = bearer(this.options.mercadoPago.accessToken, () => ({
      message: 'invalid access token',
      error: 'unauthorized',
      status: 401,
    }));
    app.get('/mercadopago/v1/payments/:id', mpAuth, (req, res) => {
      res.json(this.mercadoPago.find(String(req.params.id)));
    });

    // Banxico's SIE API (exchange rates).
    app.get('/SieAPIRest/service/v1/series/:serie/datos/:from/:to', (req, res) => {
      if (req.get('bmx-token') !== this.options.banxico.token)
        return void res.status(401).json({ error: { mensaje: 'Token inválido', detalle: 'Bmx-Token' } });
      res.json(this.banxico.series(String(req.params.serie), String(req.params.from), String(req.params.to)));
    });

    // Control.
    app.post('/_sandbox/banxico/rates', (req, res) => {
      const { serie, date, dato } = banxicoRateBody.parse(req.body);
      this.banxico.set(serie, date, dato);
      res.status(201).json({ serie, date, dato });
    });
    app.get('/_sandbox/health', (_req, res) => res.json({ ok: true }));
    app.get('/_sandbox/deliveries', (_req, res) => res.json({ deliveries: this.deliveries.list() }));
    app.get('/_sandbox/deliveries/:id', (req, res) => {
      const record = this.deliveries.get(String(req.params.id));
      if (!record) throw new FakeError(404, 'not_found', 'no such event');
      res.json(record);
    });
    app.post('/_sandbox/events/:id/deliver', async (req, res) => {
      const sending = this.deliveries.redeliver(String(req.params.id));
      if (!sending) throw new FakeError(404, 'not_found', 'no such event');
      await sending;
      res.json(this.deliveries.get(String(req.params.id)));
    });
    app.post('/_sandbox/stripe/payments', async (req, res) => {
      const { deliver, ...input } = stripePaymentBody.parse(req.body);
      const made = this.stripe.createPayment(input);
      res.status(201).json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/stripe/checkout_sessions', async (req, res) => {
      const { deliver, ...input } = checkoutBody.parse(req.body);
      const made = this.stripe.createCheckoutSession(input);
      res.status(201).json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/stripe/invoices', async (req, res) => {
      const { deliver, ...input } = checkoutBody.parse(req.body);
      const made = this.stripe.createInvoice(input);
      res.status(201).json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/stripe/payment_intents/:id/capture', async (req, res) => {
      const { amount, deliver } = captureBody.parse(req.body ?? {});
      const made = this.stripe.capture(String(req.params.id), amount);
      res.json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/stripe/refunds', async (req, res) => {
      const { deliver, ...input } = refundBody.parse(req.body);
      const made = this.stripe.refund(input);
      res.status(201).json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/stripe/refunds/:id', async (req, res) => {
      const { status, deliver } = refundUpdateBody.parse(req.body);
      const made = this.stripe.updateRefund(String(req.params.id), status);
      res.json({ ...made, events: await this.sendStripe(made.events, deliver) });
    });
    app.post('/_sandbox/mercadopago/payments', async (req, res) => {
      const { deliver, ...input } = mpPaymentBody.parse(req.body);
      const made = this.mercadoPago.createPayment(input);
      res.status(201).json({ ...made, events: await this.sendMercadoPago(made.notification, deliver) });
    });
    app.post('/_sandbox/mercadopago/payments/:id/approve', async (req, res) => {
      const { deliver } = z.object({ deliver: deliverOption }).parse(req.body ?? {});
      const made = this.mercadoPago.approve(String(req.params.id));
      res.json({ ...made, events: await this.sendMercadoPago(made.notification, deliver) });
    });
    app.post('/_sandbox/mercadopago/payments/:id/refunds', async (req, res) => {
      const { amount, deliver } = mpRefundBody.parse(req.body ?? {});
      const made = this.mercadoPago.refund(String(req.params.id), amount);
      res.status(201).json({ ...made, events: await this.sendMercadoPago(made.notification, deliver) });
    });
    // The attack a signature must withstand: a captured notification's exact headers, another body.
    app.post('/_sandbox/mercadopago/notifications/:id/replay', async (req, res) => {
      const { body } = replayBody.parse(req.body);
      const captured = this.mpHeaders.get(String(req.params.id));
      if (!captured) throw new FakeError(404, 'not_found', 'no notification with that id was sent');
      const answer = await fetch(captured.url, {
        method: 'POST',
        headers: captured.headers,
        body: JSON.stringify(body),
      });
      res.json({ status: answer.status, body: await answer.text() });
    });

    app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      if (error instanceof FakeError) return void res.status(error.status).json(error.body());
      if (error instanceof z.ZodError)
        return void res.status(400).json({ error: { type: 'invalid_request_error', message: z.prettifyError(error) } });
      this.options.logger.error({ err: error }, 'control call failed');
      res.status(500).json({ error: { type: 'api_error', message: 'internal error' } });
    });
    return app;
  }

  /** Stripe: each event POSTed as its own raw JSON, `Stripe-Signature` made at send time. */
  private async sendStripe(events: FakeEvent[], deliver: 'now' | 'hold'): Promise<string[]> {
    const { webhookUrl, webhookSecret } = this.options.stripe;
    for (const event of events) {
      const body = JSON.stringify(event, null, 2);
      const webhook = {
        id: event.id,
        provider: 'stripe' as const,
        url: webhookUrl ?? 'http://127.0.0.1:9/unset',
        body,
        headers: () => ({
          'content-type': 'application/json; charset=utf-8',
          'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
          'stripe-signature': this.signer.webhooks.generateTestHeaderString({ payload: body, secret: webhookSecret }),
        }),
      };
      if (deliver === 'hold' || !webhookUrl) this.deliveries.hold(webhook);
      else await this.deliveries.send(webhook);
    }
    return events.map((e) => e.id);
  }

  /** Mercado Pago: `POST <url>?data.id=…&type=payment`, ids only, `x-signature` + `x-request-id`. */
  private async sendMercadoPago(notification: FakeMpNotification, deliver: 'now' | 'hold'): Promise<string[]> {
    const { webhookUrl, webhookSecret } = this.options.mercadoPago;
    const id = String(notification.id);
    const url = `${webhookUrl ?? 'http://127.0.0.1:9/unset'}?data.id=${notification.data.id}&type=${notification.type}`;
    const webhook = {
      id,
      provider: 'mercadopago' as const,
      url,
      body: JSON.stringify(notification),
      headers: () => {
        const requestId = newRequestId();
        const headers = {
          'content-type': 'application/json',
          'x-request-id': requestId,
          'x-signature': mercadoPagoSignature(notification.data.id, requestId, webhookSecret),
        };
        this.mpHeaders.set(id, { url, headers });
        return headers;
      },
    };
    if (deliver === 'hold' || !webhookUrl) this.deliveries.hold(webhook);
    else await this.deliveries.send(webhook);
    return [id];
  }
}

function bearer(expected: string, refusal: () => unknown) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.get('authorization') !== `Bearer ${expected}`) return void res.status(401).json(refusal());
    next();
  };
}

function found<T>(value: T | undefined, kind: string, id: unknown): T {
  if (value === undefined) throw new FakeError(404, 'resource_missing', `No such ${kind}: '${String(id)}'`);
  return value;
}
