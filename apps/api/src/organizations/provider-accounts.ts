/**
 * Platform mode: each organization's own Stripe and Mercado Pago accounts. The platform key stores an
 * account's webhook signing secret and API key (`PUT /v1/organizations/:id/providers/:provider`),
 * sealed by VAULT_KEYS and bound to the organization and provider; the provider then sends the
 * organization's events to its own path, `/webhooks/<provider>/<organization id>`, and the
 * organization's API checks them with its secret and reads the provider's objects with its key.
 * Neither secret is ever shown again, logged or put in an error.
 */
import type { Router, Request, Response } from 'express';
import { z } from 'zod';
import { openSecret, sealSecret, type KeyVault } from '@timbra/cfdi-node';
import {
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

const context = (organizationId: string, provider: Provider) => `provider:${organizationId}:${provider}`;

/** Where the provider sends the organization's events. */
export const webhookPath = (organizationId: string, provider: Provider) => `/webhooks/${provider}/${organizationId}`;

/** An account as the platform key sees it: never its secrets. */
export function providerAccountView(organizationId: string, account: Pick<ProviderAccount, 'provider' | 'updatedAt'>) {
  return {
    provider: account.provider,
    webhookPath: webhookPath(organizationId, account.provider),
    updatedAt: account.updatedAt.toISOString(),
  };
}

/** The organization's accounts, opened (a vault that cannot open one fails closed: a VaultError). */
export async function openProviderAccounts(
  db: Parameters<typeof providerAccountsOf>[0],
  vault: KeyVault,
  organizationId: string,
): Promise<Partial<Record<Provider, ProviderSecrets>>> {
  const opened: Partial<Record<Provider, ProviderSecrets>> = {};
  for (const account of await providerAccountsOf(db, organizationId)) {
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
    found: (id: string) => Promise<{ id: string }>;
    /** The organization's API is rebuilt with its accounts as they are now. */
    changed: (organizationId: string) => Promise<void>;
  },
): void {
  router.put('/:id/providers/:provider', async (req: Request, res: Response) => {
    const organization = await deps.found(String(req.params.id));
    const provider = providerOf(req);
    const parsed = ACCOUNT.safeParse(req.body);
    if (!parsed.success) throw validation(parsed.error);
    if (!deps.vault) throw new ApiError('vault_not_configured');
    const sealed = await sealSecret(
      deps.vault,
      Buffer.from(JSON.stringify(parsed.data), 'utf8'),
      context(organization.id, provider),
    );
    const saved = await saveProviderAccount(deps.clients.for(organization.id), organization.id, provider, sealed);
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
