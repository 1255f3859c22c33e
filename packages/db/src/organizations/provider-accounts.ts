/**
 * Platform mode: an organization's own Stripe and Mercado Pago accounts (migration 20261227000000),
 * their secrets sealed by the caller (cfdi-node's vault) before they reach here. Read and written on
 * the organization's client: row-level security holds each to its own.
 */
import type { PrismaClient } from '../generated/client.ts';

export const PROVIDERS = ['stripe', 'mercadopago'] as const;
export type Provider = (typeof PROVIDERS)[number];

/**
 * An account as stored: the sealed secrets (never shown) and when they last changed; or, for Stripe
 * Connect, the platform's connected account (nothing secret: the platform's own settings read it).
 */
export interface ProviderAccount {
  provider: Provider;
  sealed: object;
  connectedAccount: string | null;
  updatedAt: Date;
}

/** A connected account another organization has (Stripe Connect: one organization an account). */
export class ConnectedAccountTaken extends Error {
  constructor(readonly account: string) {
    super(`connected account ${account} belongs to another organization`);
  }
}

/**
 * Stores (or replaces) the organization's account at `provider`: sealed secrets, or a connected account.
 * @throws ConnectedAccountTaken
 */
export async function saveProviderAccount(
  db: Pick<PrismaClient, 'providerAccount'>,
  organizationId: string,
  provider: Provider,
  account: { sealed: object; connectedAccount?: string | undefined },
): Promise<ProviderAccount> {
  const data = { sealed: account.sealed, connectedAccount: account.connectedAccount ?? null };
  try {
    const row = await db.providerAccount.upsert({
      where: { organizationId_provider: { organizationId, provider } },
      create: { organizationId, provider, ...data },
      update: data,
    });
    return { provider, sealed: row.sealed as object, connectedAccount: row.connectedAccount, updatedAt: row.updatedAt };
  } catch (error) {
    if (account.connectedAccount && (error as { code?: string }).code === 'P2002')
      throw new ConnectedAccountTaken(account.connectedAccount);
    throw error;
  }
}

/**
 * The organization a connected account's events are for (Stripe Connect), asked with the owner's
 * client (the platform's Connect endpoint names no organization before it knows).
 */
export async function organizationOfConnectedAccount(
  owner: Pick<PrismaClient, 'providerAccount'>,
  account: string,
): Promise<string | undefined> {
  const row = await owner.providerAccount.findUnique({
    where: { connectedAccount: account },
    select: { organizationId: true },
  });
  return row?.organizationId;
}

/** The organization's accounts (its client's, or the owner's for `organizationId`). */
export async function providerAccountsOf(
  db: Pick<PrismaClient, 'providerAccount'>,
  organizationId: string,
): Promise<ProviderAccount[]> {
  const rows = await db.providerAccount.findMany({ where: { organizationId }, orderBy: { provider: 'asc' } });
  return rows.map((r) => ({
    provider: r.provider as Provider,
    sealed: r.sealed as object,
    connectedAccount: r.connectedAccount,
    updatedAt: r.updatedAt,
  }));
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
