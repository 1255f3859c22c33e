/**
 * Platform mode: each organization's own Stripe and Mercado Pago accounts. The platform key stores an
 * account's webhook signing secret and API key (`PUT /v1/organizations/:id/providers/:provider`),
 * sealed by VAULT_KEYS and bound to the organization and provider; the provider then sends the
 * organization's events to its own path, `/webhooks/<provider>/<organization id>`, and the
 * organization's API checks them with its secret and reads the provider's objects with its key.
 * Neither secret is ever shown again, logged or put in an error.
 *
 * Stripe Connect: an organization's Stripe account may instead be one of the platform's connected
 * accounts (`{account: "acct_…"}`): its events come to the platform's Connect endpoint
 * (`/webhooks/stripe/connect`, STRIPE_CONNECT_WEBHOOK_SECRET), each naming its account — live ones
 * for the organization, test ones for its test twin — and are read with the platform's keys.
 */
import type { Router, Request, Response } from 'express';
import { z } from 'zod';
import { openSecret, sealSecret, type KeyVault } from '@timbra/cfdi-node';
import {
  ConnectedAccountTaken,
  PROVIDERS,
  providerAccountsOf,
  removeProviderAccount,
  saveProviderAccount,
  type OrganizationClients,
  type Provider,
  type ProviderAccount,
} from '@timbra/db/organizations';
import type { SealedSecret } from '@timbra/cfdi-node';
import { ApiError } from '../http/errors.ts';
import { validation } from '../http/lists.ts';

/** What an account holds: Stripe's webhook secret (whsec_…) and secret or restricted key; Mercado Pago's secret and access token. */
const ACCOUNT = z
  .object({
    webhookSecret: z.string().min(8).max(256),
    apiKey: z.string().min(8).max(512),
  })
  .strict();
export type ProviderSecrets = z.infer<typeof ACCOUNT>;
/** Stripe Connect: the platform's connected account that is the organization's. */
const CONNECTED = z
  .object({ account: z.string().regex(/^acct_[A-Za-z0-9]{1,64}$/, 'a Stripe account id, acct_…') })
  .strict();
/** An organization's account, opened: its own secrets, or (Stripe) a connected account of the platform's. */
export type OpenedAccount = ProviderSecrets | { connectedAccount: string };

/** Where the platform's connected accounts' events come (STRIPE_CONNECT_WEBHOOK_SECRET). */
export const CONNECT_WEBHOOK_PATH = '/webhooks/stripe/connect';

const context = (organizationId: string, provider: Provider) => `provider:${organizationId}:${provider}`;

/** Where the provider sends the organization's events. */
export const webhookPath = (organizationId: string, provider: Provider) => `/webhooks/${provider}/${organizationId}`;

/** An account as the platform key sees it: never its secrets. */
export function providerAccountView(
  organizationId: string,
  account: Pick<ProviderAccount, 'provider' | 'updatedAt' | 'connectedAccount'>,
) {
  return {
    provider: account.provider,
    ...(account.connectedAccount ? { account: account.connectedAccount } : {}),
    webhookPath: account.connectedAccount ? CONNECT_WEBHOOK_PATH : webhookPath(organizationId, account.provider),
    updatedAt: account.updatedAt.toISOString(),
  };
}

/** The organization's accounts, opened (a vault that cannot open one fails closed: a VaultError). */
export async function openProviderAccounts(
  db: Parameters<typeof providerAccountsOf>[0],
  vault: KeyVault,
  organizationId: string,
): Promise<Partial<Record<Provider, OpenedAccount>>> {
  const opened: Partial<Record<Provider, OpenedAccount>> = {};
  for (const account of await providerAccountsOf(db, organizationId)) {
    if (account.connectedAccount) {
      opened[account.provider] = { connectedAccount: account.connectedAccount };
      continue;
    }
    const plain = await openSecret(vault, account.sealed as SealedSecret, context(organizationId, account.provider));
    opened[account.provider] = ACCOUNT.parse(JSON.parse(plain.toString('utf8')));
  }
  return opened;
}

const providerOf = (req: Request): Provider => {
  const provider = String(req.params.provider);
  if (!(PROVIDERS as readonly string[]).includes(provider))
    throw new ApiError('not_found', `No provider ${JSON.stringify(provider).slice(0, 40)}: stripe or mercadopago.`);
  return provider as Provider;
};

/** `PUT` and `DELETE /v1/organizations/:id/providers/:provider` on the platform key's router. */
export function providerAccountRoutes(
  router: Router,
  deps: {
    clients: OrganizationClients;
    vault: KeyVault | undefined;
    found: (id: string) => Promise<{ id: string; mode: 'live' | 'test'; liveId: string | null }>;
    /** The organization's API is rebuilt with its accounts as they are now. */
    changed: (organizationId: string) => Promise<void>;
    /** Whether Stripe Connect is on (STRIPE_CONNECT_*), and the home organization (its Stripe is STRIPE_*). */
    connect: { on: boolean; home: string };
  },
): void {
  router.put('/:id/providers/:provider', async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    const provider = providerOf(req);
    if (provider === 'stripe' && typeof req.body === 'object' && req.body !== null && 'account' in req.body) {
      await connectAccount(deps, organization, req.body);
      const [saved] = (await providerAccountsOf(deps.clients.for(organization.id), organization.id)).filter(
        (a) => a.provider === 'stripe',
      );
      res.json(providerAccountView(organization.id, saved!));
      return;
    }
    const parsed = ACCOUNT.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    if (!deps.vault) throw new ApiError('vault_not_configured');
    const sealed = await sealSecret(
      deps.vault,
      Buffer.from(JSON.stringify(parsed.data), 'utf8'),
      context(organization.id, provider),
    );
    const saved = await saveProviderAccount(deps.clients.for(organization.id), organization.id, provider, { sealed });
    await deps.changed(organization.id);
    res.json(providerAccountView(organization.id, saved));
  });

  router.delete('/:id/providers/:provider', async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    const provider = providerOf(req);
    if (!(await removeProviderAccount(deps.clients.for(organization.id), organization.id, provider)))
      throw new ApiError('not_found', `The organization has no ${provider} account.`);
    await deps.changed(organization.id);
    res.status(204).end();
  });
}

/** `{account}`: the organization's Stripe is the platform's connected account (checked, then stored). */
async function connectAccount(
  deps: Parameters<typeof providerAccountRoutes>[1],
  organization: { id: string; mode: 'live' | 'test'; liveId: string | null },
  body: unknown,
): Promise<void> {
  const parsed = CONNECTED.safeParse(body);
  if (!parsed.success) throw validation(parsed.error);
  if (!deps.connect.on)
    throw new ApiError('connect_not_configured', undefined, [
      { path: 'account', message: 'the deployment sets no STRIPE_CONNECT_WEBHOOK_SECRET and STRIPE_CONNECT_API_KEY' },
    ]);
  if (organization.id === deps.connect.home)
    throw new ApiError('connect_not_configured', undefined, [
      { path: 'id', message: "the home organization's Stripe account is the deployment's STRIPE_* settings" },
    ]);
  // A test twin has its live organization's account: its test events come to it.
  if (organization.mode === 'test')
    throw new ApiError('organization_is_test', undefined, [
      {
        path: 'id',
        message: `its live organization ${organization.liveId} names the account; its test events come here`,
      },
    ]);
  try {
    await saveProviderAccount(deps.clients.for(organization.id), organization.id, 'stripe', {
      sealed: {},
      connectedAccount: parsed.data.account,
    });
  } catch (error) {
    if (error instanceof ConnectedAccountTaken)
      throw new ApiError('connected_account_taken', undefined, [
        { path: 'account', message: 'another organization has this connected account' },
      ]);
    throw error;
  }
  await deps.changed(organization.id);
}
