-- Platform mode's worker sends every organization's emails and webhooks: the organizations with
-- deliveries still open (pending, or sending under a lease), by a loose index scan over the index
-- below, one probe an organization, asked by a session that names none.
CREATE INDEX deliveries_open_organization_idx ON deliveries (organization_id) WHERE status IN ('pending', 'sending');
CREATE FUNCTION timbra_delivery_organizations() RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    WITH RECURSIVE orgs(id) AS (
      (SELECT organization_id FROM public.deliveries WHERE status IN ('pending', 'sending')
       ORDER BY organization_id LIMIT 1)
      UNION ALL
      SELECT (SELECT d.organization_id FROM public.deliveries d
              WHERE d.status IN ('pending', 'sending') AND d.organization_id > orgs.id
              ORDER BY d.organization_id LIMIT 1)
      FROM orgs WHERE orgs.id IS NOT NULL
    )
    SELECT id FROM orgs WHERE id IS NOT NULL
  $$;
REVOKE ALL ON FUNCTION timbra_delivery_organizations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_delivery_organizations() TO timbra_app;
