-- Platform mode's worker applies every organization's corrections (every 2 s by default): the
-- organizations with a correction whose proof is due, and — with AUTO_REFREEZE_LATE — those with a
-- pending invoice made before `late_before` (the caller's late cutoff plus the slack that makes them
-- a superset of the late ones). Asked by a session that names no organization; it learns
-- organizations only.
CREATE INDEX invoice_corrections_proving_organization_idx ON invoice_corrections (organization_id)
  WHERE status = 'proving';
CREATE FUNCTION timbra_correction_organizations(late_before timestamptz) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    WITH RECURSIVE orgs(id) AS (
      (SELECT organization_id FROM public.invoice_corrections WHERE status = 'proving'
       ORDER BY organization_id LIMIT 1)
      UNION ALL
      SELECT (SELECT c.organization_id FROM public.invoice_corrections c
              WHERE c.status = 'proving' AND c.organization_id > orgs.id
              ORDER BY c.organization_id LIMIT 1)
      FROM orgs WHERE orgs.id IS NOT NULL
    )
    SELECT id FROM orgs WHERE id IS NOT NULL
    UNION
    -- invoices_pending_idx (created_at) WHERE status = 'pending': the old pending ones are few.
    SELECT DISTINCT emisor_id FROM public.invoices
    WHERE late_before IS NOT NULL AND status = 'pending' AND created_at < late_before
  $$;
REVOKE ALL ON FUNCTION timbra_correction_organizations(timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_correction_organizations(timestamptz) TO timbra_app;
