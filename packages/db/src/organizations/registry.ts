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
  /** live, or test: a live organization's twin for its test keys (its `liveId`). */
  mode: 'live' | 'test';
  liveId: string | null;
}

const FIELDS = {
  id: true,
  rfc: true,
  nombre: true,
  regimenFiscal: true,
  lugarExpedicion: true,
  createdAt: true,
  mode: true,
  liveId: true,
};
type Row = Omit<Organization, 'mode'> & { mode: string };
const organizationOf = (row: Row): Organization => ({ ...row, mode: row.mode === 'test' ? 'test' : 'live' });

/** The facts a document is issued with: a test organization's say so (its stamp keys are its own). */
export function factsOf(o: Organization): OrganizationFacts {
  return {
    rfc: o.rfc,
    nombre: o.nombre,
    regimenFiscal: o.regimenFiscal,
    lugarExpedicion: o.lugarExpedicion,
    ...(o.mode === 'test' ? { test: true } : {}),
  };
}

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
    const existing = await tx.emisor.findFirst({ where: { rfc: facts.rfc, mode: 'live' }, select: FIELDS });
    if (existing) {
      const same = (['rfc', 'nombre', 'regimenFiscal', 'lugarExpedicion'] as const).every(
        (k) => existing[k] === facts[k],
      );
      return { organization: organizationOf(existing), created: false, conflict: !same };
    }
    const { rfc, nombre, regimenFiscal, lugarExpedicion } = facts;
    const organization = await tx.emisor.create({
      data: { rfc, nombre, regimenFiscal, lugarExpedicion },
      select: FIELDS,
    });
    await ensureSeries(tx, organization.id, series);
    return { organization: organizationOf(organization), created: true, conflict: false };
  });
}

/**
 * The test twin of a live organization, made at its first asking with the live one's facts and
 * `series` (folios from 1, its own): where its test keys' documents are kept, apart by row-level
 * security. `created: false` when it existed. Undefined for an organization that is not live.
 */
export async function ensureTestTwin(
  owner: PrismaClient,
  liveId: string,
  series: readonly { serie: string; kind: 'I' | 'E' | 'P' }[],
): Promise<{ organization: Organization; created: boolean } | undefined> {
  return owner.$transaction(async (tx) => {
    // The live row locked: two first askings at once make one twin.
    const live = await queryRows(
      tx,
      z.object({ id: z.string() }),
      Prisma.sql`SELECT id::text AS id FROM emisores WHERE id = ${liveId}::uuid AND mode = 'live' FOR UPDATE`,
    );
    if (live.length === 0) return undefined;
    const existing = await tx.emisor.findUnique({ where: { liveId }, select: FIELDS });
    if (existing) return { organization: organizationOf(existing), created: false };
    const facts = await tx.emisor.findUniqueOrThrow({
      where: { id: liveId },
      select: { rfc: true, nombre: true, regimenFiscal: true, lugarExpedicion: true },
    });
    const twin = await tx.emisor.create({ data: { ...facts, mode: 'test', liveId }, select: FIELDS });
    await ensureSeries(tx, twin.id, series);
    return { organization: organizationOf(twin), created: true };
  });
}

/** The test twin of a live organization, if it has one (the owner's client). */
export async function testTwinOf(
  owner: Pick<PrismaClient, 'emisor'>,
  liveId: string,
): Promise<Organization | undefined> {
  const row = await owner.emisor.findUnique({ where: { liveId }, select: FIELDS });
  return row ? organizationOf(row) : undefined;
}

/** One organization by id; undefined when there is none. */
export async function organizationById(
  db: Pick<PrismaClient, 'emisor'>,
  id: string,
): Promise<Organization | undefined> {
  const row = await db.emisor.findUnique({ where: { id }, select: FIELDS });
  return row ? organizationOf(row) : undefined;
}

/** A page of organizations, newest first (the API's cursor pagination). */
export async function listOrganizations(owner: Pick<PrismaClient, 'emisor'>, page: PageQuery): Promise<Organization[]> {
  const rows = await owner.emisor.findMany({ select: FIELDS, where: afterCursor(page.cursor), ...pageWindow(page) });
  return rows.map(organizationOf);
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
