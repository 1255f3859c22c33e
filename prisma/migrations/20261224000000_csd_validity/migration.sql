-- Every organization's CSD validity, for the expiry metric and its alerts (TimbraCsdExpiring): a
-- platform's operator must hear of any organization's CSD about to end. Asked by a session that
-- names no organization; it answers the certificates' public facts only (never the sealed key).
CREATE FUNCTION timbra_csd_validity()
  RETURNS TABLE (organization_id uuid, rfc text, no_certificado text, valid_from timestamptz,
                 valid_to timestamptz, active_from timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT emisor_id, rfc, no_certificado, valid_from, valid_to, active_from FROM public.csds
  $$;
REVOKE ALL ON FUNCTION timbra_csd_validity() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_csd_validity() TO timbra_app;
