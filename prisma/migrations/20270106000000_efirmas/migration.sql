-- The organizations' e.firmas (FIEL), kept as their CSDs are (docs/sat-record.md): uploaded with
-- `npm run ops -- efirma:upload` or `POST /v1/organizations/{id}/efirmas`, checked by cfdi-core's
-- one rule (checkEfirmaUpload), the private key and its password sealed by envelope encryption.
-- The e.firma signs Timbra's requests to the SAT's Descarga Masiva, never a CFDI. The one in use at
-- a moment is the newest uploaded whose validity covers it (@timbra/db/csds, currentEfirma).
CREATE TABLE efirmas (
  organization_id uuid        NOT NULL REFERENCES emisores (id),
  no_certificado  text        NOT NULL CHECK (no_certificado ~ '^[0-9]{20}$'),
  rfc             text        NOT NULL,
  valid_from      timestamptz NOT NULL,
  valid_to        timestamptz NOT NULL CHECK (valid_to > valid_from),
  certificate     bytea       NOT NULL,
  -- cfdi-node's SealedSecret of {key, password}, bound to 'efirma:<organization_id>:<no_certificado>'.
  sealed          jsonb       NOT NULL,
  -- 'verified': it chained to a trusted CA when uploaded; 'unchecked': no CA was configured.
  chain           text        NOT NULL CHECK (chain IN ('verified', 'unchecked')),
  uploaded_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT efirmas_pkey PRIMARY KEY (organization_id, no_certificado)
);
CREATE INDEX efirmas_current_idx ON efirmas (organization_id, uploaded_at DESC);
ALTER TABLE efirmas ENABLE ROW LEVEL SECURITY;
CREATE POLICY organization ON efirmas TO timbra_app
  USING (organization_id::text = (SELECT timbra_organization())::text)
  WITH CHECK (organization_id = (SELECT timbra_organization()));
GRANT SELECT, INSERT ON efirmas TO timbra_app;
