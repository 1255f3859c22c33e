/**
 * Platform mode: an organization's own Stripe and Mercado Pago accounts (migration 20261227000000),
 * their secrets sealed by the caller (cfdi-node's vault) before they reach here. Read and written on
 * the organization's client: row-level security holds each to its own.
 */
import type { PrismaClient } from '../generated/client.ts';

export const PROVIDERS = ['stripe', 'mercadopago'] as const;
export type Provider = (typeof PROVIDERS)[number];

/** An account as stored: the sealed secrets (never shown) and when they last changed. */
export interface ProviderAccount {
  provider: Provider;
  sealed: object;
  updatedAt: Date;
}

/** Stores (or replaces) the organization's account at `provider`. */
export async function saveProviderAccount(
  db: Pick<PrismaClient, 'providerAccount'>,
  organizationId: string,
  provider: Provider,
  sealed: object,
): Promise<ProviderAccount> {
  const row = await db.providerAccount.upsert({
    where: { organizationId_provider: { organizationId, provider } },
    create: { organizationId, provider, sealed },
    update: { sealed },
  });
  return { provider, sealed: row.sealed as object, updatedAt: row.updatedAt };
}

/** The organization's accounts (its client's, or the owner's for `organizationId`). */
export async function providerAccountsOf(
  db: Pick<PrismaClient, 'providerAccount'>,
  organizationId: string,
): Promise<ProviderAccount[]> {
  const rows = await db.providerAccount.findMany({ where: { organizationId }, orderBy: { provider: 'asc' } });
  return rows.map((r) => ({ provider: r.provider as Provider, sealed: r.sealed as object, updatedAt: r.updatedAt }));
}

/** Forgets the organization's account at `provider`; false when it had none. */
export async function removeProviderAccount(
  db: Pick<PrismaClient, 'providerAccount'>,
  organizationId: string,
  provider: Provider,
): Promise<boolean> {
  const { count } = await db.providerAccount.deleteMany({ where: { organizationId, provider } });
  return count > 0;
}
