-- The emisor's CSDs as data (issue #46): uploaded with `npm run ops -- csd:upload`, checked by
-- cfdi-core's one rule (checkCsdUpload), the private key and its password sealed by envelope
-- encryption (cfdi-node's vault: a data key per CSD, wrapped by a master key that never reaches the
-- database). Both apps seal with the CSD active at start: the newest one whose active_from has come
-- and whose validity covers the moment (@timbra/db/csds, activeCsd). A CSD is never deleted: the
-- documents sealed with it name its NoCertificado, and the SAT's record keeps it.
-- The key includes emisor_id, as every tenant table's will (docs/architecture.md, scaling out).
CREATE TABLE csds (
  emisor_id      uuid        NOT NULL REFERENCES emisores (id),
  no_certificado text        NOT NULL CHECK (no_certificado ~ '^[0-9]{20}$'),
  rfc            text        NOT NULL,
  valid_from     timestamptz NOT NULL,
  valid_to       timestamptz NOT NULL CHECK (valid_to > valid_from),
  certificate    bytea       NOT NULL,
  -- cfdi-node's SealedSecret of {key, password}, bound to 'csd:<emisor_id>:<no_certificado>'.
  sealed         jsonb       NOT NULL,
  -- 'verified': it chained to a trusted CA when uploaded; 'unchecked': no CA was configured.
  chain          text        NOT NULL CHECK (chain IN ('verified', 'unchecked')),
  uploaded_at    timestamptz NOT NULL DEFAULT now(),
  active_from    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (emisor_id, no_certificado)
);
CREATE INDEX csds_active_idx ON csds (emisor_id, active_from DESC);
