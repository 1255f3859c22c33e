/** `@timbra/db/keys`: API keys, their API versions, and Idempotency-Keys. */
export { API_VERSIONS, CURRENT_API_VERSION, isApiVersion, type ApiVersion } from './api-versions.ts';
export {
  SCOPES,
  DEFAULT_SCOPES,
  API_KEY_NAME_RULE,
  isApiKeyName,
  hashApiKey,
  keyPrefix,
  isScope,
  createApiKey,
  listApiKeys,
  getApiKey,
  revokeApiKey,
  findApiKey,
  keyOrganization,
  touchApiKey,
  syncConfiguredApiKeys,
  ApiKeyNameTaken,
  type Scope,
  type ApiKeyView,
  type KeyMode,
} from './api-keys.ts';
export {
  forgetIdempotentResponse,
  purgeExpiredIdempotencyKeys,
  storedIdempotentResponse,
  storeIdempotentResponse,
  tryLockIdempotencyKey,
  type StoredIdempotentResponse,
} from './idempotency-keys.ts';
