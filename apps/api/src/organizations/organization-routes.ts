/**
 * `/v1/organizations`: platform mode's management API, for the platform key alone (PLATFORM_KEY):
 * make an organization (an emisor: RFC, name, régimen, LugarExpedicion), list and read them, give
 * one its first API keys, set its own settings (series, público en general, concepto, email sender)
 * and logo, store its CSD and its Stripe and Mercado Pago accounts. Everything else an organization does, its own keys do
 * (docs/organizations.md).
 */
import type { X509Certificate } from 'node:crypto';
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { CfdiError, type OperatorCatalogs } from '@timbra/cfdi-core';
import { sealCsd, type KeyVault } from '@timbra/cfdi-node';
import type { PrismaClient } from '@timbra/db';
import { CsdAlreadyStored, listCsds, listEfirmas, storeCsd } from '@timbra/db/csds';
import { ApiKeyNameTaken, createApiKey, DEFAULT_SCOPES, keyPrefix } from '@timbra/db/keys';
import {
  createOrganization,
  listOrganizations,
  effectiveSettings,
  organizationById,
  organizationSettings,
  providerAccountsOf,
  testTwinOf,
  type EffectiveSettings,
  type Organization,
  type OrganizationClients,
  type ProviderAccount,
} from '@timbra/db/organizations';
import { ApiError } from '../http/errors.ts';
import { uuidParams } from '../http/ids.ts';
import { listParams, pageOf, validation } from '../http/lists.ts';
import type { FailureLimiter } from '../http/failure-limiter.ts';
import { createKeySchema, keyView } from '../keys/key-routes.ts';
import { providerAccountRoutes, providerAccountView } from './provider-accounts.ts';
import { logoRoutes } from './organization-logo.ts';
import { CERTIFICATE_FILES, efirmaRoutes, efirmaViews, filesOf } from './organization-efirmas.ts';
import { testModeRoutes } from './organization-test-mode.ts';
import { fiscalProblems, seriesOf, updateSettings } from './organization-settings.ts';

export interface OrganizationRoutesDeps {
  /** The database owner's client: organizations' rows are the owner's to write. */
  owner: PrismaClient;
  clients: OrganizationClients;
  /** PLATFORM_KEY; undefined: platform mode is off (every route answers 404 platform_mode_off). */
  platformKey: string | undefined;
  /**
   * The deployment's settings (SERIE_*, PUBLICO_GENERAL_*, CONCEPTO_*): what an organization invoices
   * with where it sets nothing of its own (PATCH), checked with its facts.
   */
  defaults: EffectiveSettings;
  catalogs?: OperatorCatalogs | undefined;
  vault: KeyVault | undefined;
  /** The SAT's CA certificates an uploaded CSD must chain to; undefined: the chain is not checked. */
  trustedCas?: readonly X509Certificate[] | undefined;
  failures: FailureLimiter;
  bodyLimit: string;
  /** Called when an organization's CSD or provider accounts change: its API is rebuilt with them. */
  changed: (organizationId: string) => void;
  /** Whether Stripe Connect is on (STRIPE_CONNECT_*), and the home organization (its Stripe is STRIPE_*). */
  connect: { on: boolean; home: string };
}

const FACTS = z
  .object({
    rfc: z.string().min(12).max(13),
    nombre: z.string().min(1).max(254),
    regimenFiscal: z.string().regex(/^\d{3}$/),
    lugarExpedicion: z.string().regex(/^\d{5}$/),
  })
  .strict();

const CSD_UPLOAD = CERTIFICATE_FILES.extend({
  activeFrom: z.string().datetime({ offset: true }).optional(),
}).strict();

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** 404 when platform mode is off; 401 (counted as a failed authentication) for any other key. */
function platformKeyOnly(deps: OrganizationRoutesDeps) {
  const wanted = deps.platformKey === undefined ? undefined : sha256(deps.platformKey);
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!wanted) return next(new ApiError('platform_mode_off'));
    const address = req.ip ?? 'unknown';
    if (deps.failures.blocked(address))
      return next(new ApiError('rate_limited', 'Too many failed authentications from this address.'));
    const key = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? req.get('x-api-key');
    if (key && key.length <= 512 && timingSafeEqual(sha256(key), wanted)) return next();
    if (deps.failures.fail(address, key ? keyPrefix(key) : undefined))
      return next(new ApiError('rate_limited', 'Too many failed authentications.'));
    next(new ApiError('unauthorized', 'The platform key (PLATFORM_KEY) manages organizations; no other key does.'));
  };
}

function organizationView(
  o: Organization,
  testId: string | null,
  logo: boolean,
  settings: EffectiveSettings,
  held: { csds: Awaited<ReturnType<typeof listCsds>>; efirmas: Awaited<ReturnType<typeof listEfirmas>> },
  providers: readonly ProviderAccount[],
) {
  return {
    id: o.id,
    rfc: o.rfc,
    nombre: o.nombre,
    regimenFiscal: o.regimenFiscal,
    lugarExpedicion: o.lugarExpedicion,
    createdAt: o.createdAt.toISOString(),
    /** live, or test: a live organization's twin, for its test keys (POST /v1/organizations/:id/test). */
    mode: o.mode,
    ...(o.mode === 'test' ? { liveOrganization: o.liveId } : { testOrganization: testId }),
    settings,
    /** Its own logo on its PDFs (else the deployment's INVOICE_LOGO_FILE). */
    logo,
    csds: held.csds.map((c) => ({
      noCertificado: c.noCertificado,
      validFrom: c.validFrom.toISOString(),
      validTo: c.validTo.toISOString(),
      activeFrom: c.activeFrom.toISOString(),
      sealing: c.active,
      chain: c.chain,
    })),
    efirmas: efirmaViews(held.efirmas),
    providers: providers.map((p) => providerAccountView(o.id, p)),
  };
}

/** An organization as the platform key sees it: its facts, settings, CSDs, e.firmas and provider accounts (no secret). */
async function describe(deps: OrganizationRoutesDeps, o: Organization) {
  // Whether it has one, without reading its bytes.
  const logo = (await deps.owner.emisor.count({ where: { id: o.id, logo: { not: null } } })) > 0;
  const twin = o.mode === 'live' ? await testTwinOf(deps.owner, o.id) : undefined;
  return organizationView(
    o,
    twin?.id ?? null,
    logo,
    effectiveSettings(await organizationSettings(deps.owner, o.id), deps.defaults),
    { csds: await listCsds(deps.owner, o.id, new Date()), efirmas: await listEfirmas(deps.owner, o.id, new Date()) },
    await providerAccountsOf(deps.owner, o.id),
  );
}

export function organizationRoutes(deps: OrganizationRoutesDeps): Router {
  const router = Router();
  router.use(platformKeyOnly(deps));
  router.use(express.json({ limit: deps.bodyLimit, strict: true }));
  uuidParams(router, 'id');
  const found = async (id: string) => {
    const organization = await organizationById(deps.owner, id);
    if (!organization) throw new ApiError('not_found');
    return organization;
  };
  const described = (o: Organization) => describe(deps, o);
  // Its test twin seals with its CSD, invoices with its settings and prints its logo: rebuilt too.
  const changed = async (id: string) => {
    deps.changed(id);
    const twin = await testTwinOf(deps.owner, id);
    if (twin) deps.changed(twin.id);
  };

  router.post('/', async (req: Request, res: Response) => {
    const parsed = FACTS.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    const facts = { ...parsed.data, rfc: parsed.data.rfc.toUpperCase() };
    const problems = fiscalProblems(facts, deps.defaults, deps.catalogs);
    if (problems.length > 0) throw new ApiError('fiscal_rules_failed', undefined, problems);
    const made = await createOrganization(deps.owner, facts, seriesOf(deps.defaults));
    if (made.conflict)
      throw new ApiError('organization_exists', undefined, [
        { path: 'rfc', message: `organization ${made.organization.id} has this RFC` },
      ]);
    // The same facts again are the same organization: a retried POST answers as the first did.
    res.status(made.created ? 201 : 200).json(await described(made.organization));
  });

  router.get('/', async (req: Request, res: Response) => {
    const page = listParams(req);
    const rows = await listOrganizations(deps.owner, page);
    const views = await Promise.all(rows.slice(0, page.limit).map(described));
    res.json(pageOf(rows, page.limit, (o) => views[rows.indexOf(o)]!));
  });

  router.get('/:id', async (req: Request, res: Response) => {
    const organization = await found(String(req.params.id));
    res.json(await described(organization));
  });

  // Its own settings over the deployment's: checked with its facts, its new series' counters made,
  // its API rebuilt with them. A field set to null takes the deployment's again.
  router.patch('/:id', async (req: Request, res: Response) => {
    const organization = await found(String(req.params.id));
    await updateSettings(deps, organization, req.body);
    await changed(organization.id);
    res.json(await described(organization));
  });

  keyRoute(router, deps, found);

  router.post('/:id/csds', async (req: Request, res: Response) => {
    const organization = await found(String(req.params.id));
    await storeUploadedCsd(deps, organization, req.body);
    await changed(organization.id);
    res.status(201).json(await described(organization));
  });

  efirmaRoutes(router, { clients: deps.clients, vault: deps.vault, trustedCas: deps.trustedCas, found, described });
  testModeRoutes(router, { owner: deps.owner, defaults: deps.defaults, found, described });
  providerAccountRoutes(router, { clients: deps.clients, vault: deps.vault, found, changed, connect: deps.connect });
  logoRoutes(router, {
    owner: deps.owner,
    found,
    changed,
    described: async (id) => described(await found(id)),
  });
  return router;
}

/** `POST /:id/keys`: the organization's keys, made on its own client (row-level security writes them in its name). */
function keyRoute(router: Router, deps: OrganizationRoutesDeps, found: (id: string) => Promise<Organization>): void {
  router.post('/:id/keys', async (req: Request, res: Response) => {
    const organization = await found(String(req.params.id));
    const parsed = createKeySchema.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    try {
      // A test organization's keys are tk_test_…, a live one's tk_live_….
      const made = await createApiKey(
        deps.clients.for(organization.id),
        parsed.data.name,
        [...new Set(parsed.data.scopes ?? DEFAULT_SCOPES)],
        organization.mode,
        parsed.data.apiVersion,
      );
      res.status(201).json({ key: made.key, organization: organization.id, ...keyView(made.apiKey) });
    } catch (error) {
      if (error instanceof ApiKeyNameTaken) throw new ApiError('key_name_taken');
      throw error;
    }
  });
}

/** A CSD uploaded for `organization`: checked as `ops csd:upload` checks it, sealed by VAULT_KEYS, stored. */
async function storeUploadedCsd(
  deps: OrganizationRoutesDeps,
  organization: Organization,
  body: unknown,
): Promise<void> {
  const parsed = CSD_UPLOAD.safeParse(body);
  if (!parsed.success) throw validation(parsed.error);
  if (!deps.vault) throw new ApiError('vault_not_configured');
  const files = filesOf(parsed.data);
  try {
    const { stored } = await sealCsd(files, organization, {
      vault: deps.vault,
      at: new Date(),
      ...(deps.trustedCas ? { trustedCas: deps.trustedCas } : {}),
    });
    const activeFrom = parsed.data.activeFrom ? { activeFrom: new Date(parsed.data.activeFrom) } : {};
    await storeCsd(deps.clients.for(organization.id), { ...stored, ...activeFrom });
  } catch (error) {
    if (error instanceof CfdiError)
      throw new ApiError('csd_rejected', undefined, [{ path: error.code, message: error.message }]);
    if (error instanceof CsdAlreadyStored) throw new ApiError('csd_already_stored');
    throw error;
  }
}
