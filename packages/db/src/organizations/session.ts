import { isUuid } from '../light.ts';

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
