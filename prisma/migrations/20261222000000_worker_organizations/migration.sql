-- Platform mode's worker serves every organization from one process: its sessions name one
-- organization at a time, so what it must know before naming one is asked here, of functions that
-- run with their owner's rights and answer only that: the organizations there are, and those with
-- outbox rows waiting to be relayed.
CREATE FUNCTION timbra_organizations() RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT id FROM public.emisores ORDER BY id
  $$;

-- The organizations with pending outbox rows, by a loose index scan over the index below: one probe
-- an organization, however many rows each has waiting (a backlog of 50,000 costs what one row does).
CREATE INDEX outbox_pending_organization_idx ON outbox (organization_id) WHERE status = 'pending';
CREATE FUNCTION timbra_pending_organizations() RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    WITH RECURSIVE orgs(id) AS (
      (SELECT organization_id FROM public.outbox WHERE status = 'pending' ORDER BY organization_id LIMIT 1)
      UNION ALL
      SELECT (SELECT o.organization_id FROM public.outbox o
              WHERE o.status = 'pending' AND o.organization_id > orgs.id
              ORDER BY o.organization_id LIMIT 1)
      FROM orgs WHERE orgs.id IS NOT NULL
    )
    SELECT id FROM orgs WHERE id IS NOT NULL
  $$;

REVOKE ALL ON FUNCTION timbra_organizations() FROM PUBLIC;
REVOKE ALL ON FUNCTION timbra_pending_organizations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_organizations() TO timbra_app;
GRANT EXECUTE ON FUNCTION timbra_pending_organizations() TO timbra_app;
