/**
 * The organizations themselves, as platform mode's `/v1/organizations` manages them: rows of
 * `emisores`, which only the database's owner writes (an organization cannot make itself).
 */
import { z } from 'zod';
import { Prisma, type PrismaClient } from '../generated/client.ts';
import { queryRows, type RawDb } from '../sql.ts';
import { ensureSeries } from '../invoices/folios.ts';
import type { OrganizationFacts } from './open.ts';
import { afterCursor, pageWindow, type PageQuery } from '../pages.ts';

/** An organization as the platform sees it. */
export interface Organization extends OrganizationFacts {
  id: string;
  createdAt: Date;
}

const FIELDS = { id: true, rfc: true, nombre: true, regimenFiscal: true, lugarExpedicion: true, createdAt: true };

/**
 * Makes the organization of `facts.rfc` with its `series`, on the owner's client. An RFC already
 * made with the same facts is the same organization (`created: false`: a retried request); with
 * other facts, `conflict` holds the one there is.
 */
export async function createOrganization(
  owner: PrismaClient,
  facts: OrganizationFacts,
  series: readonly { serie: string; kind: 'I' | 'E' | 'P' }[],
): Promise<{ organization: Organization; created: boolean; conflict: boolean }> {
  return owner.$transaction(async (tx) => {
    const existing = await tx.emisor.findUnique({ where: { rfc: facts.rfc }, select: FIELDS });
    if (existing) {
      const same = (Object.keys(facts) as (keyof OrganizationFacts)[]).every((k) => existing[k] === facts[k]);
      return { organization: existing, created: false, conflict: !same };
    }
    const organization = await tx.emisor.create({ data: facts, select: FIELDS });
    await ensureSeries(tx, organization.id, series);
    return { organization, created: true, conflict: false };
  });
}

/** One organization by id; undefined when there is none. */
export async function organizationById(
  db: Pick<PrismaClient, 'emisor'>,
  id: string,
): Promise<Organization | undefined> {
  return (await db.emisor.findUnique({ where: { id }, select: FIELDS })) ?? undefined;
}

/** A page of organizations, newest first (the API's cursor pagination). */
export async function listOrganizations(owner: Pick<PrismaClient, 'emisor'>, page: PageQuery): Promise<Organization[]> {
  return owner.emisor.findMany({ select: FIELDS, where: afterCursor(page.cursor), ...pageWindow(page) });
}

const idRow = z.object({ id: z.string() });

/**
 * Every organization's id, asked by a session that names none (the worker's, before it works for
 * each): the database function timbra_organizations (migration 20261222000000).
 */
export async function organizationIds(db: RawDb): Promise<string[]> {
  return (await queryRows(db, idRow, Prisma.sql`SELECT id::text AS id FROM timbra_organizations() AS id`)).map(
    (r) => r.id,
  );
}

/** The organizations with outbox rows waiting to be relayed (timbra_pending_organizations: one index probe each). */
export async function pendingOrganizations(db: RawDb): Promise<string[]> {
  return (await queryRows(db, idRow, Prisma.sql`SELECT id::text AS id FROM timbra_pending_organizations() AS id`)).map(
    (r) => r.id,
  );
}

/** The organizations with emails or webhooks still to send (timbra_delivery_organizations: one index probe each). */
export async function deliveryOrganizations(db: RawDb): Promise<string[]> {
  return (await queryRows(db, idRow, Prisma.sql`SELECT id::text AS id FROM timbra_delivery_organizations() AS id`)).map(
    (r) => r.id,
  );
}

/**
 * The organizations whose corrections are due (a proof to seek) and, given `lateBefore`, those with
 * a pending invoice made before it (AUTO_REFREEZE_LATE): timbra_correction_organizations.
 */
export async function correctionOrganizations(db: RawDb, lateBefore: Date | undefined): Promise<string[]> {
  return (
    await queryRows(
      db,
      idRow,
      Prisma.sql`SELECT id::text AS id FROM timbra_correction_organizations(${lateBefore ?? null}::timestamptz) AS id`,
    )
  ).map((r) => r.id);
}
