-- API keys as data (issue #18): scopes instead of one admin flag, a prefix to tell keys apart
-- without the secret, when each was last used, revocation, and where the key came from.
ALTER TABLE "api_clients" ADD COLUMN "prefix" TEXT;
ALTER TABLE "api_clients" ADD COLUMN "scopes" TEXT[] NOT NULL DEFAULT ARRAY['read', 'write', 'cancel']::TEXT[];
ALTER TABLE "api_clients" ADD COLUMN "last_used_at" TIMESTAMPTZ(3);
ALTER TABLE "api_clients" ADD COLUMN "revoked_at" TIMESTAMPTZ(3);
-- `config`: from API_KEYS, which stays their source of truth (a key it no longer lists is revoked at
-- start-up); `ops`: made with `npm run ops -- keys:create` or POST /v1/keys, revoked only explicitly.
ALTER TABLE "api_clients" ADD COLUMN "source" TEXT NOT NULL DEFAULT 'config';
UPDATE "api_clients" SET "scopes" = ARRAY['read', 'write', 'cancel', 'admin']::TEXT[] WHERE "admin";
ALTER TABLE "api_clients" DROP COLUMN "admin";
ALTER TABLE "api_clients" ADD CONSTRAINT "api_clients_scopes_check"
  CHECK ("scopes" <@ ARRAY['read', 'write', 'cancel', 'admin']::TEXT[] AND cardinality("scopes") > 0);
ALTER TABLE "api_clients" ADD CONSTRAINT "api_clients_source_check" CHECK ("source" IN ('config', 'ops'));
