-- Reconciliation with the SAT's own record (docs/sat-record.md): each run against Descarga Masiva,
-- its period, its counts and its findings. The latest finished run of an organization is what the
-- worker's gauges and alerts read, so a finding stays loud until a later run no longer finds it.
CREATE TABLE sat_reconciliations (
  organization_id uuid NOT NULL DEFAULT timbra_organization_or_sole(),
  id              uuid NOT NULL DEFAULT timbra_uuid7(),
  -- The Fecha bounds asked of the SAT (Mexico City wall-clock, both included).
  period_from     text NOT NULL,
  period_to       text NOT NULL,
  -- Who ran it: `worker` (the daily job) or `ops`.
  run_by          text NOT NULL,
  started_at      timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  finished_at     timestamptz(3),
  sat_count       integer,
  our_count       integer,
  matched         integer,
  findings        jsonb NOT NULL DEFAULT '[]',
  -- Why the run could not finish (the SAT refused or never decided, no e.firma): no findings then.
  error           text,
  CONSTRAINT sat_reconciliations_pkey PRIMARY KEY (organization_id, id)
);
CREATE INDEX sat_reconciliations_latest_idx ON sat_reconciliations (organization_id, started_at DESC);
ALTER TABLE sat_reconciliations ENABLE ROW LEVEL SECURITY;
CREATE POLICY organization ON sat_reconciliations TO timbra_app
  USING (organization_id::text = (SELECT timbra_organization())::text)
  WITH CHECK (organization_id = (SELECT timbra_organization()));
GRANT SELECT, INSERT, UPDATE, DELETE ON sat_reconciliations TO timbra_app;
