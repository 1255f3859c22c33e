/**
 * `@timbra/db/organizations`: platform mode's isolation. An organization is an emisor (its row in
 * `emisores`); every tenant row names it, and row-level security holds a client made with
 * `createPrisma(url, { organization })` to its rows. The apps open theirs here, and can check what
 * the database makes of a client.
 */
export { APP_ROLE, narrowedTo } from './session.ts';
export { OrganizationClients, type SeveralOrganizations } from './clients.ts';
export { backlogEverywhere, backlogOf, type Backlog, type ChannelBacklog, type LateRule } from './backlog.ts';
export { assertIsolated, isolationOf, NotIsolatedError, type Isolation } from './isolation.ts';
export {
  joinOrganization,
  joinOrganizationIn,
  openOrganization,
  openOrganizationIn,
  type OrganizationClient,
  type OrganizationFacts,
} from './open.ts';
export {
  correctionOrganizations,
  createOrganization,
  deliveryOrganizations,
  ensureTestTwin,
  factsOf,
  listOrganizations,
  organizationById,
  organizationIds,
  pendingOrganizations,
  testTwinOf,
  type Organization,
} from './registry.ts';
export {
  ConnectedAccountTaken,
  organizationOfConnectedAccount,
  PROVIDERS,
  providerAccountsOf,
  removeProviderAccount,
  saveProviderAccount,
  type Provider,
  type ProviderAccount,
} from './provider-accounts.ts';
export {
  BRAND_COLOR,
  contrastWithWhite,
  effectiveSection,
  effectiveSettings,
  mergeSettings,
  ORGANIZATION_SETTINGS,
  organizationLogo,
  organizationSettings,
  ownInvoicing,
  saveOrganizationLogo,
  saveOrganizationSettings,
  type EffectiveSettings,
  type OrganizationSettings,
} from './settings.ts';
