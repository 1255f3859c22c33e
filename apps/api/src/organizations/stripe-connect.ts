/**
 * Stripe Connect's endpoint, `POST /webhooks/stripe/connect` (platform mode): every connected
 * account's events come here, live and test, signed with the platform's Connect endpoint secret
 * (STRIPE_CONNECT_WEBHOOK_SECRET), each naming its `account` and `livemode`. Checked here first,
 * then routed: a live event to the organization that named that account
 * (`PUT /v1/organizations/:id/providers/stripe {account}`), a test one to its test twin — whose
 * API checks it again and reads the account's objects with the platform's key of its mode. An
 * account no organization named, or a test event of an organization without a twin, is answered
 * 200 `ignored` (Stripe would retry anything else for days) and logged.
 */
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { PrismaClient } from '@timbra/db';
import { organizationOfConnectedAccount, providerAccountsOf, testTwinOf } from '@timbra/db/organizations';
import { errorHandler } from '../http/error-handler.ts';
import { ApiError } from '../http/errors.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';
import type { Metrics } from '../http/metrics.ts';
import { requestPlumbing } from '../http/plumbing.ts';
import { stripeSigned } from '../provider-webhooks/stripe-webhook.ts';
import type { AppDeps } from '../app.ts';
import type { ProviderClients } from './platform.ts';
import { CONNECT_WEBHOOK_PATH, type OpenedAccount } from './provider-accounts.ts';

/** Stripe Connect as the deployment sets it (STRIPE_CONNECT_*). */
export interface ConnectSettings {
  webhookSecret: string;
  /** The platform's live secret key (a live organization's connected account is read with it). */
  apiKey: string;
  /** Its test key (a test twin's): none, and test events cannot be read (503, the provider retries). */
  testApiKey: string | undefined;
  toleranceSeconds: number;
}

/** The live organization's connected account (Stripe Connect), if its Stripe account is one. */
export async function connectedAccountOf(live: PrismaClient, liveId: string): Promise<OpenedAccount | undefined> {
  const account = (await providerAccountsOf(live, liveId)).find((a) => a.provider === 'stripe')?.connectedAccount;
  return account ? { connectedAccount: account } : undefined;
}

/**
 * How an organization's Stripe events are checked and its objects read: with its own account's
 * secret and key, or — a connected account — with the Connect endpoint's secret and the platform's
 * key of the organization's mode, as that account (`Stripe-Account`). None: 503 webhook_not_configured.
 */
export function stripeReading(
  account: OpenedAccount | undefined,
  mode: 'live' | 'test',
  options: { providers: ProviderClients; connect?: ConnectSettings | undefined },
): { secret: string | undefined; api: NonNullable<AppDeps['stripe']['api']> | undefined } {
  if (!account) return { secret: undefined, api: undefined };
  if ('apiKey' in account) return { secret: account.webhookSecret, api: options.providers.stripe(account.apiKey) };
  const key = mode === 'test' ? options.connect?.testApiKey : options.connect?.apiKey;
  return {
    secret: options.connect?.webhookSecret,
    api: key ? options.providers.stripe(key, account.connectedAccount) : undefined,
  };
}

export interface ConnectEndpointDeps {
  connect: ConnectSettings | undefined;
  owner: PrismaClient;
  /** The organization's API (its `/webhooks/stripe` takes the event). */
  appOf: (organizationId: string) => Promise<RequestHandler>;
  failures: FailureLimiter;
  bodyLimit: string;
  logger: Logger;
  metrics: Metrics;
  trustProxy: unknown;
  now?: () => number;
}

/** Which organization an event is for: its account's, or that one's test twin for a test event. */
async function organizationFor(owner: PrismaClient, event: { account: string; livemode: boolean }) {
  const live = await organizationOfConnectedAccount(owner, event.account);
  if (!live || event.livemode) return live;
  return (await testTwinOf(owner, live))?.id;
}

export function connectEndpoint(deps: ConnectEndpointDeps): Express {
  const app = express();
  requestPlumbing(app, deps);
  app.post(CONNECT_WEBHOOK_PATH, express.raw({ type: () => true, limit: deps.bodyLimit }), async (req, res, next) => {
    if (!deps.connect) throw new ApiError('webhook_not_configured');
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const header = req.get('stripe-signature') ?? '';
    const now = deps.now?.() ?? Date.now();
    if (!stripeSigned(body, header, deps.connect.webhookSecret, deps.connect.toleranceSeconds, now)) {
      deps.metrics.webhooks.inc({ provider: 'stripe', result: 'bad_signature' });
      if (deps.failures.fail(req.ip ?? 'unknown')) throw new ApiError('rate_limited', 'Too many bad signatures.');
      throw new ApiError('invalid_signature');
    }
    const event = routingOf(body);
    const organization = event ? await organizationFor(deps.owner, event) : undefined;
    if (!organization) {
      deps.logger.info(
        { requestId: req.requestId, account: event?.account, livemode: event?.livemode },
        'stripe connect: an event for no organization (its account named by none, or a test event without a test twin): ignored',
      );
      deps.metrics.webhooks.inc({ provider: 'stripe', result: 'ignored' });
      res.json({ received: true, duplicate: false, result: 'ignored', requestId: req.requestId });
      return;
    }
    // The organization's API takes it at the provider's usual path (its body already read).
    req.url = '/webhooks/stripe';
    await (
      await deps.appOf(organization)
    )(req, res, next);
  });
  app.use(errorHandler(deps.logger));
  return app;
}

/** The event's account and mode; undefined when it names no account (not a Connect event). */
function routingOf(body: Buffer): { account: string; livemode: boolean } | undefined {
  try {
    const e = JSON.parse(body.toString('utf8')) as { account?: unknown; livemode?: unknown };
    return typeof e.account === 'string' && e.account.length <= 80
      ? { account: e.account, livemode: e.livemode === true }
      : undefined;
  } catch {
    return undefined;
  }
}
