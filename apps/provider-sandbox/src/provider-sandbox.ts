/**
 * The provider sandbox's HTTP face, on one port:
 *
 * - `/v1/…` — Stripe's API (the read endpoints Timbra calls: stripe-api-routes.ts), Bearer the
 *   configured secret key;
 * - `/mercadopago/v1/payments/{id}` — Mercado Pago's API, Bearer the configured access token (point
 *   the SDK's base URL at `<sandbox>/mercadopago`);
 * - `/_sandbox/…` — the control API: make payments, captures and refunds happen (each sends its
 *   signed webhooks, or holds them for the caller to deliver in any order, again, or late), and see
 *   every delivery attempt (control-routes.ts). README.md of this app lists each call.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import Stripe from 'stripe';
import { z } from 'zod';
import { BanxicoFake } from './banxico-fake.ts';
import { Deliveries } from './deliveries.ts';
import { controlRouter, type SandboxControl } from './control-routes.ts';
import { MercadoPagoFake, mercadoPagoSignature, newRequestId, type FakeMpNotification } from './mercadopago-fake.ts';
import { bearer, stripeApiRouter } from './stripe-api-routes.ts';
import { FakeError, StripeFake, type FakeEvent } from './stripe-fake.ts';

export interface ProviderSandboxOptions {
  host: string;
  port: number;
  stripe: {
    secretKey: string;
    webhookUrl: string | undefined;
    webhookSecret: string;
    /** The live secret key: live-mode payments are read with it only (unset: every object with `secretKey`). */
    liveSecretKey?: string | undefined;
    /** Stripe Connect: where connected accounts' events go (the platform's Connect endpoint), signed with its secret. */
    connect?: { webhookUrl: string | undefined; webhookSecret: string } | undefined;
  };
  mercadoPago: { accessToken: string; webhookUrl: string | undefined; webhookSecret: string };
  /** The token Banxico SIE callers must send (`Bmx-Token`): Timbra's BANXICO_TOKEN. */
  banxico: { token: string };
  /** Waits between a failed delivery and its retries. */
  retryDelaysMs: readonly number[];
  logger: Logger;
}

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

    app.use('/v1', stripeApiRouter(this.stripe, this.options.stripe.secretKey, this.options.stripe.liveSecretKey));

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

    app.use('/_sandbox', controlRouter(this.control()));

    app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
      if (error instanceof FakeError) return void res.status(error.status).json(error.body());
      if (error instanceof z.ZodError)
        return void res.status(400).json({ error: { type: 'invalid_request_error', message: z.prettifyError(error) } });
      this.options.logger.error({ err: error }, 'control call failed');
      res.status(500).json({ error: { type: 'api_error', message: 'internal error' } });
    });
    return app;
  }

  /** What the control API acts on. */
  private control(): SandboxControl {
    return {
      stripe: this.stripe,
      mercadoPago: this.mercadoPago,
      banxico: this.banxico,
      deliveries: this.deliveries,
      mpHeaders: this.mpHeaders,
      sendStripe: (events, deliver) => this.sendStripe(events, deliver),
      sendMercadoPago: (notification, deliver) => this.sendMercadoPago(notification, deliver),
    };
  }

  /**
   * Stripe: each event POSTed as its own raw JSON, `Stripe-Signature` made at send time; a connected
   * account's (it names `account`) to the Connect endpoint, signed with its secret.
   */
  private async sendStripe(events: FakeEvent[], deliver: 'now' | 'hold'): Promise<string[]> {
    for (const event of events) {
      const { webhookUrl, webhookSecret } =
        event.account !== undefined
          ? (this.options.stripe.connect ?? { webhookUrl: undefined, webhookSecret: 'whsec_unset' })
          : this.options.stripe;
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
