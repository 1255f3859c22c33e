/**
 * Platform mode: one API process for many organizations. Each organization has its own API — the
 * app `createApp` builds, on its own client held to it by row-level security — and a request reaches
 * the one its API key belongs to (the database says which: `keyOrganization`). The home
 * organization (EMISOR_*) answers everything else: requests with no key or an unknown one (401),
 * the providers' webhooks at their usual paths, `/facturar`, the dashboard, health. An organization's
 * own provider accounts send to `/webhooks/<provider>/<organization id>` (provider-accounts.ts).
 * `/v1/organizations` is the platform key's (organization-routes.ts).
 */
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { apiVersion } from '../keys/auth.ts';
import type { Logger } from 'pino';
import { brandedPdf, type Csd } from '@timbra/cfdi-core';
import { emisorCsd, type KeyVault } from '@timbra/cfdi-node';
import { sealingCsd } from '@timbra/db/csds';
import { hashApiKey, keyOrganization } from '@timbra/db/keys';
import {
  effectiveSettings,
  factsOf,
  organizationById,
  ownInvoicing,
  type EffectiveSettings,
  type OrganizationClients,
  type OrganizationFacts,
} from '@timbra/db/organizations';
import { createApp, type AppDeps } from '../app.ts';
import type { RecordPaymentDeps } from '../payments/record-payment.ts';
import { ApiError } from '../http/errors.ts';
import { errorHandler } from '../http/error-handler.ts';
import type { Metrics } from '../http/metrics.ts';
import { requestPlumbing } from '../http/plumbing.ts';
import { organizationRoutes, type OrganizationRoutesDeps } from './organization-routes.ts';
import { CONNECT_WEBHOOK_PATH, openProviderAccounts } from './provider-accounts.ts';
import { connectEndpoint, connectedAccountOf, stripeReading, type ConnectSettings } from './stripe-connect.ts';
import { SELF_INVOICE_PATH } from '../tickets/self-invoice-form.ts';

export interface PlatformDeps {
  clients: OrganizationClients;
  /** The home organization (EMISOR_*) and its API. */
  home: { organizationId: string; app: RequestHandler };
  /**
   * Another organization's API, built when its first request comes (and again after
   * `refreshMs`, or when its CSD changes): rejects with an ApiError when it cannot serve (no CSD).
   */
  build: (organizationId: string) => Promise<RequestHandler>;
  /** How long an organization's API is kept before it is built again (its CSD read again). */
  refreshMs?: number;
  routes: Omit<OrganizationRoutesDeps, 'changed' | 'clients' | 'connect'>;
  /** Stripe Connect (STRIPE_CONNECT_*): its endpoint, `/webhooks/stripe/connect`. */
  connect?: ConnectSettings | undefined;
  logger: Logger;
  metrics: Metrics;
  trustProxy: boolean;
}

/** Which organization a key belongs to, remembered a minute (the organization's API checks the key itself). */
class KeyRoutes {
  private readonly known = new Map<string, { organization: string | undefined; at: number }>();
  constructor(private readonly clients: OrganizationClients) {}

  async organizationOf(key: string): Promise<string | undefined> {
    const hash = hashApiKey(key);
    const hit = this.known.get(hash);
    if (hit && Date.now() - hit.at < 60_000) return hit.organization;
    const organization = await keyOrganization(this.clients.unscoped, key);
    // Unknown keys are not remembered: a flood of them must not push the known ones out.
    if (organization) {
      if (this.known.size >= 10_000) this.known.delete(this.known.keys().next().value!);
      this.known.set(hash, { organization, at: Date.now() });
    }
    return organization;
  }
}

/** The organizations' APIs, each built once and kept `refreshMs`. */
class OrganizationApps {
  private readonly apps = new Map<string, { app: Promise<RequestHandler>; at: number }>();
  constructor(
    private readonly build: (organizationId: string) => Promise<RequestHandler>,
    private readonly refreshMs: number,
  ) {}

  get(organizationId: string): Promise<RequestHandler> {
    const kept = this.apps.get(organizationId);
    if (kept && Date.now() - kept.at < this.refreshMs) return kept.app;
    const app = this.build(organizationId);
    this.apps.set(organizationId, { app, at: Date.now() });
    // A failed build is not kept: the next request tries again (its CSD may have come).
    app.catch(() => this.apps.delete(organizationId));
    return app;
  }

  forget(organizationId: string): void {
    this.apps.delete(organizationId);
  }
}

/** The provider clients an organization's own keys open (the deployment's STRIPE_API_URL, MERCADOPAGO_API_URL). */
export interface ProviderClients {
  /** With `account`: as the platform's connected account (Stripe Connect's `Stripe-Account`). */
  stripe: (apiKey: string, account?: string) => NonNullable<AppDeps['stripe']['api']>;
  mercadoPago: (accessToken: string) => NonNullable<AppDeps['mercadoPago']['fetchPayment']>;
}

/**
 * How another organization's API is built: the home API's dependencies, on the organization's
 * client, with its facts, its own settings over the deployment's, the stored CSD active now (409
 * organization_without_csd before it has one) and its own provider accounts (without one, that provider's webhook answers 503
 * webhook_not_configured). /facturar and the dashboard stay the home organization's.
 */
export function organizationApis(options: {
  clients: OrganizationClients;
  vault: KeyVault | undefined;
  home: AppDeps;
  /** The deployment's settings, under the organization's own. */
  defaults: EffectiveSettings;
  paymentsOf: (
    organizationId: string,
    facts: OrganizationFacts,
    csd: Csd,
    settings: EffectiveSettings,
  ) => RecordPaymentDeps;
  providers: ProviderClients;
  /** Stripe Connect (STRIPE_CONNECT_*): its endpoint's secret and the platform's keys. */
  connect?: ConnectSettings | undefined;
}): (organizationId: string) => Promise<RequestHandler> {
  return async (organizationId) => {
    const client = options.clients.for(organizationId);
    const organization = await organizationById(client, organizationId);
    if (!organization) throw new ApiError('not_found', 'No such organization.');
    // A test twin invoices as its live organization does: with its settings, and its logo and CSD
    // where it has none of its own. Its provider accounts are its own (a provider's test-mode secrets).
    const stored = options.vault
      ? await sealingCsd((id) => options.clients.for(id), organization, new Date())
      : undefined;
    if (!stored) throw new ApiError('organization_without_csd');
    const opened = await emisorCsd({ stored, vault: options.vault, files: undefined });
    const { stripe, mercadopago } = await openProviderAccounts(client, options.vault!, organizationId);
    // A twin without a Stripe account of its own takes its live organization's connected account's test events.
    const { liveId } = organization;
    const connected = !stripe && liveId ? await connectedAccountOf(options.clients.for(liveId), liveId) : undefined;
    const own = await ownInvoicing((id) => options.clients.for(id), organizationId);
    const settings = effectiveSettings(own.settings, options.defaults);
    const logo = own.logo;
    const facts = factsOf(organization);
    return createApp({
      ...options.home,
      prisma: client,
      // Its own logo and colour on its PDFs (and its /facturar), else the deployment's.
      pdf: brandedPdf(options.home.pdf, logo, settings.branding.color),
      selfInvoicePath: `${SELF_INVOICE_PATH}/${organizationId}`,
      payments: options.paymentsOf(organizationId, facts, opened!.csd, settings),
      dashboard: undefined,
      stripe: { ...options.home.stripe, ...stripeReading(stripe ?? connected, organization.mode, options) },
      mercadoPago: {
        ...options.home.mercadoPago,
        ...(mercadopago && 'apiKey' in mercadopago
          ? { secret: mercadopago.webhookSecret, fetchPayment: options.providers.mercadoPago(mercadopago.apiKey) }
          : { secret: undefined, fetchPayment: undefined }),
      },
    });
  };
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** `/webhooks/<provider>/<organization id>`: the organization's own provider account's events. */
const ORGANIZATION_WEBHOOK = new RegExp(`^/webhooks/(stripe|mercadopago)/(${UUID})/?$`, 'i');
/** `/facturar/<organization id>…`: the organization's own self-invoicing page. */
const ORGANIZATION_PAGE = new RegExp(`^${SELF_INVOICE_PATH}/(${UUID})(?:/|$)`, 'i');

/** Answers a request whose organization could not be served with its error (`req.routeError`). */
function failedApp(deps: PlatformDeps): Express {
  const failed = express();
  requestPlumbing(failed, deps);
  failed.use((req: Request, _res: Response, next: NextFunction) => next(req.routeError));
  failed.use(errorHandler(deps.logger));
  return failed;
}

/** The platform key's routes, with the request plumbing and errors every API answer has. */
function managementApp(deps: PlatformDeps, apps: OrganizationApps): Express {
  const manage = express();
  requestPlumbing(manage, deps);
  manage.use(
    '/v1/organizations',
    apiVersion,
    organizationRoutes({
      ...deps.routes,
      clients: deps.clients,
      changed: (id) => apps.forget(id),
      connect: { on: deps.connect !== undefined, home: deps.home.organizationId },
    }),
  );
  manage.use(errorHandler(deps.logger));
  return manage;
}

export function createPlatform(deps: PlatformDeps): Express {
  const keys = new KeyRoutes(deps.clients);
  const apps = new OrganizationApps(deps.build, deps.refreshMs ?? 300_000);
  const appOf = (id: string) => (id === deps.home.organizationId ? Promise.resolve(deps.home.app) : apps.get(id));
  const manage = managementApp(deps, apps);
  const connect = connectEndpoint({
    ...deps,
    connect: deps.connect,
    owner: deps.routes.owner,
    failures: deps.routes.failures,
    bodyLimit: deps.routes.bodyLimit,
    appOf,
  });
  const failed = failedApp(deps);

  const app = express();
  app.disable('x-powered-by');
  const route = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const key = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? req.get('x-api-key');
    const organization = key && key.length <= 512 ? await keys.organizationOf(key) : undefined;
    // No key, an unknown one, or the home organization's: the home API answers (401 for the first two).
    if (!organization || organization === deps.home.organizationId) {
      await deps.home.app(req, res, next);
      return;
    }
    const handler = await apps.get(organization);
    await handler(req, res, next);
  };
  // A provider's event for an organization: its API answers it at the provider's usual path.
  const hook = async (req: Request, res: Response, next: NextFunction, at: RegExpExecArray): Promise<void> => {
    const organization = at[2]!.toLowerCase();
    req.url = req.url.replace(/^\/webhooks\/(stripe|mercadopago)\/[^/?]+\/?/, '/webhooks/$1');
    await (
      await appOf(organization)
    )(req, res, next);
  };
  // Its self-invoicing page: its API serves it at /facturar/<its id> (the home one's is /facturar).
  const selfInvoice = async (req: Request, res: Response, next: NextFunction, id: string): Promise<void> => {
    const organization = id.toLowerCase();
    if (organization === deps.home.organizationId) {
      req.url = req.url.slice(`${SELF_INVOICE_PATH}/${id}`.length) || '/';
      req.url = `${SELF_INVOICE_PATH}${req.url.startsWith('/') ? '' : '/'}${req.url}`;
      await deps.home.app(req, res, next);
      return;
    }
    await (
      await apps.get(organization)
    )(req, res, next);
  };
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.path === '/v1/organizations' || req.path.startsWith('/v1/organizations/')) {
      manage(req, res, next);
      return;
    }
    if (req.path === CONNECT_WEBHOOK_PATH) {
      connect(req, res, next);
      return;
    }
    const page = ORGANIZATION_PAGE.exec(req.path);
    if (page) {
      selfInvoice(req, res, next, page[1]!).catch((error: unknown) => {
        req.routeError = error instanceof ApiError ? error : new ApiError('unavailable');
        failed(req, res, next);
      });
      return;
    }
    const webhook = ORGANIZATION_WEBHOOK.exec(req.path);
    if (!req.path.startsWith('/v1/') && !webhook) {
      void deps.home.app(req, res, next);
      return;
    }
    (webhook ? hook(req, res, next, webhook) : route(req, res, next)).catch((error: unknown) => {
      req.routeError = error instanceof ApiError ? error : new ApiError('unavailable');
      if (!(error instanceof ApiError)) deps.logger.error({ err: error }, 'an organization could not be served');
      failed(req, res, next);
    });
  });
  return app;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Why platform mode could not route this request to its organization's API. */
    routeError?: ApiError;
  }
}
