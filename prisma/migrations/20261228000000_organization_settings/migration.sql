-- Platform mode: what an organization sets for itself (PATCH /v1/organizations/:id): its series, its
-- público en general mode and periodicidad, its concepto's claves and description. Absent fields
-- take the deployment's settings (SERIE_*, PUBLICO_GENERAL_*, CONCEPTO_*); the home organization
-- (EMISOR_*) keeps those. Shape and defaults: packages/db/src/organizations/settings.ts.
ALTER TABLE emisores ADD COLUMN settings jsonb NOT NULL DEFAULT '{}'::jsonb;
