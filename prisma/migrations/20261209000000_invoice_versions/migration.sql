-- Versions of an invoice's frozen document, corrections, and replacements.
--
-- An invoice keeps its serie-folio and stamp key for ever; its frozen document may be replaced by a new
-- version only while nothing was stamped (uuid IS NULL) and only through a row in invoice_versions that
-- keeps the old bytes and one that holds the new ones. Proving that no PAC stamped the old version is
-- the worker's job (corrections); this trigger makes sure no code path can rewrite bytes in place.
ALTER TABLE "invoices" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 1;
-- The invoice this one replaces (TipoRelacion 04): the original is cancelled with motivo 01 once this is stamped.
ALTER TABLE "invoices" ADD COLUMN "replaces_invoice_id" UUID;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_replaces_invoice_id_fkey" FOREIGN KEY ("replaces_invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE UNIQUE INDEX "invoices_replaces_invoice_id_key" ON "invoices"("replaces_invoice_id");
-- The version an outbox row carries (the queue's job id is per version) and a PAC call was for.
ALTER TABLE "outbox" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "pac_attempts" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 1;

CREATE TABLE "invoice_versions" (
    "id" UUID NOT NULL,
    "invoice_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "frozen_xml" TEXT NOT NULL,
    "cadena_original" TEXT NOT NULL,
    "fecha" TEXT NOT NULL,
    "stamp_key" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "superseded_at" TIMESTAMPTZ(3),
    "proof" JSONB,
    CONSTRAINT "invoice_versions_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "invoice_versions_invoice_id_version_key" ON "invoice_versions"("invoice_id", "version");
ALTER TABLE "invoice_versions" ADD CONSTRAINT "invoice_versions_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

CREATE TABLE "invoice_corrections" (
    "id" UUID NOT NULL,
    "invoice_id" UUID NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'proving',
    "changes" JSONB NOT NULL,
    "request" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "requested_by" TEXT NOT NULL,
    "from_version" INTEGER NOT NULL,
    "to_version" INTEGER,
    "code" TEXT,
    "detail" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "invoice_corrections_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "invoice_corrections_status_check" CHECK ("status" IN ('proving', 'applied', 'refused'))
);
CREATE INDEX "invoice_corrections_invoice_id_idx" ON "invoice_corrections"("invoice_id");
-- One correction in progress per invoice.
CREATE UNIQUE INDEX "invoice_corrections_open_key" ON "invoice_corrections"("invoice_id") WHERE status = 'proving';
CREATE INDEX "invoice_corrections_due_idx" ON "invoice_corrections"("next_attempt_at") WHERE status = 'proving';
ALTER TABLE "invoice_corrections" ADD CONSTRAINT "invoice_corrections_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- An outbox row may be `held`: a correction is proving that its version was never stamped, and no
-- PAC call may start for it meanwhile.
CREATE OR REPLACE FUNCTION "timbra_invoices_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'invoices are never deleted (invoice %)', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.stamp_key IS DISTINCT FROM NEW.stamp_key THEN
    RAISE EXCEPTION 'the stamp key of invoice % cannot change', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.frozen_xml IS NOT NULL AND NEW.frozen_xml IS DISTINCT FROM OLD.frozen_xml THEN
    -- Only a new version, of a document nothing stamped, with both versions kept.
    IF OLD.uuid IS NOT NULL OR NEW.uuid IS NOT NULL OR NEW.version <> OLD.version + 1
       OR NOT EXISTS (SELECT 1 FROM "invoice_versions" v WHERE v.invoice_id = OLD.id AND v.version = OLD.version AND v.frozen_xml = OLD.frozen_xml)
       OR NOT EXISTS (SELECT 1 FROM "invoice_versions" v WHERE v.invoice_id = NEW.id AND v.version = NEW.version AND v.frozen_xml = NEW.frozen_xml) THEN
      RAISE EXCEPTION 'the frozen XML of invoice % cannot change', OLD.id USING ERRCODE = 'raise_exception';
    END IF;
  ELSIF NEW.version IS DISTINCT FROM OLD.version THEN
    RAISE EXCEPTION 'the version of invoice % changes only with a new frozen XML', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END;
$$;

-- A version is kept for ever: its bytes never change, it is never deleted; it may be marked superseded once.
CREATE FUNCTION "timbra_invoice_versions_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'invoice versions are never deleted' USING ERRCODE = 'raise_exception';
  END IF;
  IF (NEW.invoice_id, NEW.version, NEW.frozen_xml, NEW.cadena_original, NEW.fecha, NEW.stamp_key, NEW.reason, NEW.created_by, NEW.created_at)
     IS DISTINCT FROM (OLD.invoice_id, OLD.version, OLD.frozen_xml, OLD.cadena_original, OLD.fecha, OLD.stamp_key, OLD.reason, OLD.created_by, OLD.created_at)
     OR (OLD.superseded_at IS NOT NULL AND NEW.superseded_at IS DISTINCT FROM OLD.superseded_at) THEN
    RAISE EXCEPTION 'invoice version % of invoice % cannot change', OLD.version, OLD.invoice_id USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER "invoice_versions_guard" BEFORE UPDATE OR DELETE ON "invoice_versions" FOR EACH ROW EXECUTE FUNCTION "timbra_invoice_versions_guard"();

ALTER TABLE "outbox" DROP CONSTRAINT "outbox_status_check";
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_status_check" CHECK ("status" IN ('pending', 'enqueued', 'held', 'done', 'failed'));

-- Pending invoices are few (in flight); the worker's late-Fecha gauge reads them at every scrape.
CREATE INDEX "invoices_pending_idx" ON "invoices" ("created_at") WHERE "status" = 'pending';
