-- Every organization's e.firma validity, for the expiry metric and its alerts (TimbraEfirmaExpiring):
-- once an organization's e.firma ends, its requests to the SAT's Descarga Masiva cannot be signed and
-- its reconciliation against the SAT's record stops. Asked by a session that names no organization,
-- as timbra_csd_validity; it answers the certificates' public facts only (never the sealed key).
CREATE FUNCTION timbra_efirma_validity()
  RETURNS TABLE (organization_id uuid, rfc text, no_certificado text, valid_from timestamptz,
                 valid_to timestamptz, uploaded_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT organization_id, rfc, no_certificado, valid_from, valid_to, uploaded_at FROM public.efirmas
  $$;
REVOKE ALL ON FUNCTION timbra_efirma_validity() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_efirma_validity() TO timbra_app;
