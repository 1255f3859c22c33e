import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { queryRows, type Db } from '../sql.ts';

const isolationRow = z.object({
  role: z.string(),
  organization: z.string().nullable(),
  bypasses: z.boolean(),
  exists: z.boolean(),
});

/** What row-level security makes of a client's sessions: its role, its organization, and whether RLS binds it. */
export interface Isolation {
  role: string;
  organization: string | undefined;
  /** The role is a superuser or has BYPASSRLS: the policies do not apply to it. */
  bypassesRls: boolean;
  /** The organization named has its row (`emisores`): tenant rows have no foreign key to it. */
  exists: boolean;
}

/** How `db`'s sessions are isolated, read from Postgres itself. */
export async function isolationOf(db: Db): Promise<Isolation> {
  const [row] = await queryRows(
    db,
    isolationRow,
    Prisma.sql`
      SELECT current_user::text AS role, timbra_organization()::text AS organization,
             (r.rolsuper OR r.rolbypassrls) AS bypasses,
             EXISTS (SELECT 1 FROM emisores WHERE id = timbra_organization()) AS exists
      FROM pg_roles r WHERE r.rolname = current_user`,
  );
  return {
    role: row!.role,
    organization: row!.organization ?? undefined,
    bypassesRls: row!.bypasses,
    exists: row!.exists,
  };
}

/** A client the database would not hold to its organization: a configuration mistake, not an outage. */
export class NotIsolatedError extends Error {
  override name = 'NotIsolatedError';
}

/**
 * Refuses a client that would not be held to `organization` by the database: the apps call it at
 * start, so a connection string or role that defeats row-level security stops them.
 */
export async function assertIsolated(db: Db, organization: string): Promise<void> {
  const isolation = await isolationOf(db);
  if (isolation.bypassesRls)
    throw new NotIsolatedError(
      `the database role ${isolation.role} bypasses row-level security; the apps run as timbra_app`,
    );
  if (isolation.organization !== organization.toLowerCase())
    throw new NotIsolatedError(
      `the sessions work for organization ${isolation.organization ?? '(none)'}, not ${organization}`,
    );
  if (!isolation.exists) throw new NotIsolatedError(`organization ${organization} does not exist`);
}
