import { createPrisma } from '../index.ts';
import type { PrismaClient } from '../generated/client.ts';
import { emisorByRfc, ensureEmisor } from '../invoices/folios.ts';
import { assertIsolated } from './isolation.ts';
import type { OrganizationClients } from './clients.ts';

/** An organization's facts as the configuration gives them (today's `EMISOR_*` settings). */
export interface OrganizationFacts {
  rfc: string;
  nombre: string;
  regimenFiscal: string;
  lugarExpedicion: string;
  /**
   * A test organization's (a live one's twin): its documents' stamp keys are apart from the live
   * one's (cfdi-core's sourceIdIn), so they never meet in the queue or at a PAC.
   */
  test?: boolean;
}

/** A client held to one organization by row-level security, and that organization's id. */
export interface OrganizationClient {
  prisma: PrismaClient;
  organizationId: string;
}

/** Runs `work` on a one-connection client of the database's owner, ended afterwards. */
async function asOwner<T>(databaseUrl: string, work: (owner: PrismaClient) => Promise<T>): Promise<T> {
  const owner = createPrisma(databaseUrl, { poolSize: 1 });
  try {
    return await work(owner);
  } finally {
    await owner.$disconnect();
  }
}

async function scopedTo(databaseUrl: string, organizationId: string, poolSize?: number): Promise<PrismaClient> {
  const prisma = createPrisma(databaseUrl, { poolSize, organization: organizationId });
  try {
    await assertIsolated(prisma, organizationId);
  } catch (error) {
    await prisma.$disconnect();
    throw error;
  }
  return prisma;
}

/**
 * The API's start: makes or brings up to date the organization's row from the configuration (as the
 * database's owner: an organization cannot make itself), then returns a client that works for it
 * alone. Refuses a database role that would not be held to it.
 */
export async function openOrganization(
  databaseUrl: string,
  facts: OrganizationFacts,
  options: { poolSize?: number } = {},
): Promise<OrganizationClient> {
  const organizationId = await asOwner(databaseUrl, (owner) => ensureEmisor(owner, facts));
  return { prisma: await scopedTo(databaseUrl, organizationId, options.poolSize), organizationId };
}

/**
 * The worker's and the ops tools' start: the organization of `rfc` as the API recorded it, and a
 * client that works for it alone; undefined before the API's first start made it.
 */
export async function joinOrganization(
  databaseUrl: string,
  rfc: string,
  options: { poolSize?: number } = {},
): Promise<OrganizationClient | undefined> {
  const row = await asOwner(databaseUrl, (owner) => emisorByRfc(owner, rfc));
  if (!row) return undefined;
  return { prisma: await scopedTo(databaseUrl, row.id, options.poolSize), organizationId: row.id };
}

/**
 * As `openOrganization`, for a process serving many organizations over `clients` (platform mode's
 * API): the organization's row made or brought up to date by `owner`, then its client, checked.
 */
export async function openOrganizationIn(
  clients: OrganizationClients,
  owner: PrismaClient,
  facts: OrganizationFacts,
): Promise<OrganizationClient> {
  const organizationId = await ensureEmisor(owner, facts);
  const prisma = clients.for(organizationId);
  await assertIsolated(prisma, organizationId);
  return { prisma, organizationId };
}

/**
 * As `joinOrganization`, for a process serving many organizations over `clients` (platform mode's
 * worker): the organization of `rfc` as the API recorded it, and its client, checked; undefined
 * before the API's first start made it.
 */
export async function joinOrganizationIn(
  clients: OrganizationClients,
  databaseUrl: string,
  rfc: string,
): Promise<OrganizationClient | undefined> {
  const row = await asOwner(databaseUrl, (owner) => emisorByRfc(owner, rfc));
  if (!row) return undefined;
  const prisma = clients.for(row.id);
  await assertIsolated(prisma, row.id);
  return { prisma, organizationId: row.id };
}
