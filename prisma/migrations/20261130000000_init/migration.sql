-- Timbra: initial schema. Written to match prisma/schema.prisma (names follow Prisma's conventions:
-- <table>_pkey, <table>_<columns>_key, <table>_<column>_fkey), so the client and the database agree.

CREATE TABLE "emisores" (
    "id" UUID NOT NULL,
    "rfc" TEXT NOT NULL,
    "nombre" TEXT NOT NULL,
    "regimen_fiscal" TEXT NOT NULL,
    "lugar_expedicion" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "emisores_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "emisores_rfc_key" ON "emisores"("rfc");

CREATE TABLE "series" (
    "id" UUID NOT NULL,
    "emisor_id" UUID NOT NULL,
    "serie" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "next_folio" INTEGER NOT NULL DEFAULT 1,
    CONSTRAINT "series_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "series_next_folio_check" CHECK ("next_folio" >= 1)
);
CREATE UNIQUE INDEX "series_emisor_id_serie_key" ON "series"("emisor_id", "serie");

CREATE TABLE "webhook_events" (
    "id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "result" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhook_events_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "webhook_events_provider_event_id_key" ON "webhook_events"("provider", "event_id");

CREATE TABLE "payments" (
    "id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "amount" DECIMAL(18,2) NOT NULL,
    "currency" TEXT NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "receptor" JSONB,
    "description" TEXT,
    "client_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "payments_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "payments_amount_check" CHECK ("amount" > 0)
);
CREATE UNIQUE INDEX "payments_provider_external_id_key" ON "payments"("provider", "external_id");

CREATE TABLE "refunds" (
    "id" UUID NOT NULL,
    "payment_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "amount" DECIMAL(18,2) NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "refunds_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "refunds_amount_check" CHECK ("amount" > 0)
);
CREATE UNIQUE INDEX "refunds_provider_external_id_key" ON "refunds"("provider", "external_id");

CREATE TABLE "invoices" (
    "id" UUID NOT NULL,
    "emisor_id" UUID NOT NULL,
    "payment_id" UUID,
    "kind" TEXT NOT NULL,
    "serie" TEXT NOT NULL,
    "folio" INTEGER NOT NULL,
    "fecha" TEXT,
    "moneda" TEXT NOT NULL,
    "sub_total" DECIMAL(18,2) NOT NULL,
    "total" DECIMAL(18,2) NOT NULL,
    "status" TEXT NOT NULL,
    "problems" JSONB,
    "stamp_key" TEXT NOT NULL,
    "frozen_xml" TEXT,
    "cadena_original" TEXT,
    "uuid" TEXT,
    "tfd_xml" TEXT,
    "stamped_xml" TEXT,
    "pac" TEXT,
    "stamped_at" TIMESTAMPTZ(3),
    "related_invoice_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "invoices_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "invoices_status_check" CHECK ("status" IN ('needs_data', 'pending', 'stamped', 'stamp_failed', 'cancel_requested', 'cancelled')),
    CONSTRAINT "invoices_kind_check" CHECK ("kind" IN ('I', 'E', 'P'))
);
CREATE UNIQUE INDEX "invoices_stamp_key_key" ON "invoices"("stamp_key");
CREATE UNIQUE INDEX "invoices_uuid_key" ON "invoices"("uuid");
CREATE UNIQUE INDEX "invoices_emisor_id_serie_folio_key" ON "invoices"("emisor_id", "serie", "folio");
CREATE INDEX "invoices_payment_id_idx" ON "invoices"("payment_id");

CREATE TABLE "outbox" (
    "id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "invoice_id" UUID NOT NULL,
    "stamp_key" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,
    "enqueued_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "outbox_status_check" CHECK ("status" IN ('pending', 'enqueued', 'done', 'failed')),
    CONSTRAINT "outbox_kind_check" CHECK ("kind" IN ('stamp', 'cancel'))
);
CREATE UNIQUE INDEX "outbox_stamp_key_key" ON "outbox"("stamp_key");
-- The relay's hot query: pending rows due now, oldest first. Partial: done rows are most rows.
CREATE INDEX "outbox_pending_idx" ON "outbox"("available_at") WHERE status = 'pending';

CREATE TABLE "pac_attempts" (
    "id" UUID NOT NULL,
    "invoice_id" UUID NOT NULL,
    "pac" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "uuid" TEXT,
    "code" TEXT,
    "duration_ms" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "pac_attempts_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "pac_attempts_invoice_id_idx" ON "pac_attempts"("invoice_id");

CREATE TABLE "api_clients" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "admin" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "api_clients_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "api_clients_name_key" ON "api_clients"("name");
CREATE UNIQUE INDEX "api_clients_key_hash_key" ON "api_clients"("key_hash");

CREATE TABLE "idempotency_keys" (
    "id" UUID NOT NULL,
    "client_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "response_status" INTEGER NOT NULL,
    "response_body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "idempotency_keys_client_id_key_key" ON "idempotency_keys"("client_id", "key");
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys"("expires_at");

ALTER TABLE "series" ADD CONSTRAINT "series_emisor_id_fkey" FOREIGN KEY ("emisor_id") REFERENCES "emisores"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_emisor_id_fkey" FOREIGN KEY ("emisor_id") REFERENCES "emisores"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "payments"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "pac_attempts" ADD CONSTRAINT "pac_attempts_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Invariant: the frozen XML of an invoice is written once and never rewritten, and invoices are never
-- deleted (a CFDI is cancelled, not removed). Enforced here so no code path can break it. The errors use
-- SQLSTATE P0001 (raise_exception) so clients report their message instead of remapping the code.
CREATE FUNCTION "timbra_invoices_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'invoices are never deleted (invoice %)', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.frozen_xml IS NOT NULL AND NEW.frozen_xml IS DISTINCT FROM OLD.frozen_xml THEN
    RAISE EXCEPTION 'the frozen XML of invoice % cannot change', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.stamp_key IS DISTINCT FROM NEW.stamp_key THEN
    RAISE EXCEPTION 'the stamp key of invoice % cannot change', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  RETURN NEW;
END;
$$;
CREATE TRIGGER "invoices_guard" BEFORE UPDATE OR DELETE ON "invoices" FOR EACH ROW EXECUTE FUNCTION "timbra_invoices_guard"();
