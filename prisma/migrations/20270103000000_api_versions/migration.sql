-- Dated API versions (docs/versioning.md). A key answers in its own version unless a request names
-- another (Timbra-Version); a key made without one takes the version current when it was made. An
-- event records the version its object was written in, and carries it to its webhooks. A new version
-- changes both defaults here and API_VERSIONS in packages/db/src/keys/api-versions.ts (a test holds
-- them together).
ALTER TABLE api_clients ADD COLUMN api_version text NOT NULL DEFAULT '2026-12-05'
  CONSTRAINT api_clients_api_version_check CHECK (api_version ~ '^\d{4}-\d{2}-\d{2}$');
ALTER TABLE events ADD COLUMN api_version text NOT NULL DEFAULT '2026-12-05'
  CONSTRAINT events_api_version_check CHECK (api_version ~ '^\d{4}-\d{2}-\d{2}$');
