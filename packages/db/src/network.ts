/**
 * Node's socket error codes that say a server cannot be reached (refused, reset, timed out, no route,
 * no such host): an outage, not a bug. Read by `isRedisConnectionError` and `databaseTrouble`.
 */
export const UNREACHABLE_CODES = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
] as const;
