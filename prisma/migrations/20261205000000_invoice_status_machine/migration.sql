-- The invoice state machine, enforced by the database: `status` becomes an enum, and a trigger refuses
-- any status an invoice may not start in and any change the transition table does not list. The
-- table's rows are the same as TRANSITIONS in packages/db/src/invoice-status.ts (a test compares them),
-- so no code path — ours, a script, a person at psql — can write an illegal transition.
CREATE TYPE "invoice_status" AS ENUM ('waiting', 'needs_data', 'pending', 'stamped', 'stamp_failed', 'cancel_requested', 'cancelled');

DROP INDEX "invoices_waiting_idx";
ALTER TABLE "invoices" DROP CONSTRAINT "invoices_status_check";
ALTER TABLE "invoices" ALTER COLUMN "status" TYPE "invoice_status" USING "status"::"invoice_status";
CREATE INDEX "invoices_waiting_idx" ON "invoices"("related_invoice_id") WHERE status = 'waiting';

-- from_status NULL: a status an invoice may be written in (INSERT).
CREATE TABLE "invoice_status_transitions" (
    "from_status" "invoice_status",
    "to_status" "invoice_status" NOT NULL,
    CONSTRAINT "invoice_status_transitions_unique" UNIQUE NULLS NOT DISTINCT ("from_status", "to_status")
);
INSERT INTO "invoice_status_transitions" ("from_status", "to_status") VALUES
    (NULL, 'waiting'), (NULL, 'needs_data'), (NULL, 'pending'),
    ('waiting', 'pending'), ('waiting', 'needs_data'),
    ('needs_data', 'pending'),
    ('pending', 'stamped'), ('pending', 'stamp_failed'),
    ('stamp_failed', 'pending'), ('stamp_failed', 'stamped'),
    ('stamped', 'cancel_requested'),
    ('cancel_requested', 'cancelled'), ('cancel_requested', 'stamped');

CREATE FUNCTION "timbra_invoice_status_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NOT EXISTS (SELECT 1 FROM "invoice_status_transitions" WHERE "from_status" IS NULL AND "to_status" = NEW.status) THEN
      RAISE EXCEPTION 'an invoice cannot be written as %', NEW.status USING ERRCODE = 'raise_exception';
    END IF;
  ELSIF NEW.status IS DISTINCT FROM OLD.status
        AND NOT EXISTS (SELECT 1 FROM "invoice_status_transitions" WHERE "from_status" = OLD.status AND "to_status" = NEW.status) THEN
    RAISE EXCEPTION 'invoice % cannot go from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER "invoices_status_guard" BEFORE INSERT OR UPDATE OF "status" ON "invoices"
    FOR EACH ROW EXECUTE FUNCTION "timbra_invoice_status_guard"();
