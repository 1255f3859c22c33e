-- Re-drives of dead letters (issue #18): who put a failed outbox row back to pending, when and why.
-- Append-only: the invoice's history shows them, and nothing edits or deletes one.
CREATE TABLE "outbox_redrives" (
  "id" UUID NOT NULL,
  "outbox_id" UUID NOT NULL,
  "invoice_id" UUID NOT NULL,
  -- `api:<key name>`, `ops:<user>`, `dashboard:<user>`
  "by" TEXT NOT NULL,
  "reason" TEXT,
  -- The failure it answered (the row's last_error when it was re-driven).
  "last_error" TEXT,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "outbox_redrives_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "outbox_redrives_outbox_id_fkey" FOREIGN KEY ("outbox_id") REFERENCES "outbox"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  CONSTRAINT "outbox_redrives_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "outbox_redrives_invoice_id_idx" ON "outbox_redrives"("invoice_id");

CREATE FUNCTION outbox_redrives_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'outbox_redrives is append-only';
END $$;
CREATE TRIGGER outbox_redrives_append_only BEFORE UPDATE OR DELETE ON "outbox_redrives"
  FOR EACH ROW EXECUTE FUNCTION outbox_redrives_append_only();
