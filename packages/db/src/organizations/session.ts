import { z } from 'zod';
import { Prisma } from '../generated/client.ts';
import { isUuid } from '../light.ts';
import { queryRows, type RawDb } from '../sql.ts';

/** The role the apps' sessions run as: no BYPASSRLS, so row-level security restricts every query. */
export const APP_ROLE = 'timbra_app';

/**
 * The session settings (libpq's `options`) of a connection that works for `organization` alone: the
 * role timbra_app and app.org, the setting the policies compare each row's organization with. Set
 * when the connection opens, so no statement runs before them. Empty without an organization (the
 * owner's connection).
 */
export function organizationSession(organization: string | undefined): string {
  if (organization === undefined) return '';
  if (!isUuid(organization))
    throw new Error(`an organization is named by its id (a UUID), not ${JSON.stringify(organization)}`);
  return `-c role=${APP_ROLE} -c app.org=${organization.toLowerCase()}`;
}

const narrowedRow = z.object({ named: z.string() });

/**
 * Runs `fn` in the caller's transaction narrowed to one of the organizations its session names (a
 * transaction `OrganizationClients.across()` runs): `fn`'s statements see and write that
 * organization's rows alone, and rows they write without naming one are its. Written for work
 * whose statements rely on the session's organization (the column default) inside a batch of
 * several. The session names the whole set again after `fn` (if `fn` throws, the transaction is
 * rolled back anyway). @throws when the transaction does not name `organizationId`.
 */
export async function narrowedTo<T>(tx: RawDb, organizationId: string, fn: () => Promise<T>): Promise<T> {
  const id = organizationId.toLowerCase();
  // The set named now is read before it is narrowed (the CTE's row comes before the projection).
  const [was] = await queryRows(
    tx,
    narrowedRow,
    Prisma.sql`
      WITH was AS MATERIALIZED (SELECT current_setting('app.org') AS named)
      SELECT was.named, set_config('app.org', ${id}, true) AS now FROM was
      WHERE ${id} = ANY ((SELECT timbra_named_organizations())::text[])`,
  );
  if (!was) throw new Error(`this transaction does not work for organization ${JSON.stringify(organizationId)}`);
  const result = await fn();
  await queryRows(tx, z.object({}), Prisma.sql`SELECT set_config('app.org', ${was.named}, true)`);
  return result;
}
