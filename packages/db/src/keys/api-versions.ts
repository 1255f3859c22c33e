/**
 * Timbra's dated API versions, oldest first (docs/versioning.md). A request is answered in the version
 * it names (`Timbra-Version`), else in its key's; events record the version their object was written
 * in. A new version is added here, and the column defaults of api_clients and events move to it in a
 * migration (packages/db/test/api-versions.test.ts holds the two together).
 */
export const API_VERSIONS = ['2026-12-05'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];
export const CURRENT_API_VERSION: ApiVersion = API_VERSIONS[API_VERSIONS.length - 1]!;

export function isApiVersion(value: string): value is ApiVersion {
  return (API_VERSIONS as readonly string[]).includes(value);
}
