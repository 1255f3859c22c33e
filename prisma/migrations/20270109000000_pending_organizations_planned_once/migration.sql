-- The relay asks which organizations have rows pending at every drain: about once a payment at a
-- steady rate. As a SQL function with a SET clause (search_path) it cannot be inlined, so its body
-- was parsed and planned at every call: planning was 85% of its time (pg_stat_statements, issue
-- #49). In PL/pgSQL its query is planned once per session. The same query, the same rights.
CREATE OR REPLACE FUNCTION timbra_pending_organizations() RETURNS SETOF uuid
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
  RETURN QUERY
    WITH RECURSIVE orgs(id) AS (
      (SELECT organization_id FROM public.outbox WHERE status = 'pending' ORDER BY organization_id LIMIT 1)
      UNION ALL
      SELECT (SELECT o.organization_id FROM public.outbox o
              WHERE o.status = 'pending' AND o.organization_id > orgs.id
              ORDER BY o.organization_id LIMIT 1)
      FROM orgs WHERE orgs.id IS NOT NULL
    )
    SELECT orgs.id FROM orgs WHERE orgs.id IS NOT NULL;
END $$;
