-- Platform mode: one API process serves many organizations, and a request names its organization
-- only through its API key. Row-level security hides every api_clients row from a session that has
-- not named an organization yet, so the key's organization is found here: a function that runs with
-- its owner's rights, answers one question (the organization of a key hash not revoked) and nothing
-- else. The organization's own client then checks the key again under its policies.
CREATE FUNCTION timbra_key_organization(key_hash text) RETURNS uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT organization_id FROM public.api_clients c WHERE c.key_hash = $1 AND c.revoked_at IS NULL
  $$;
REVOKE ALL ON FUNCTION timbra_key_organization(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_key_organization(text) TO timbra_app;
