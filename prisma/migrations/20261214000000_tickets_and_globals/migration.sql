-- Público en general in global mode (PUBLICO_GENERAL_MODE=global): a payment without the customer's
-- fiscal data becomes a ticket; each closed period's tickets go in one factura global (or several
-- parts of it), unless the customer self-invoiced the ticket first. Invariant: a ticket ends in
-- exactly one document (its own Ingreso or its period's global) — or in none when it was refunded
-- in full before its global.

-- One row per period whose global was issued: the unique key is what makes it exactly once.
CREATE TABLE "global_periods" (
  "id"           UUID NOT NULL DEFAULT gen_random_uuid(),
  "emisor_id"    UUID NOT NULL,
  "periodicidad" TEXT NOT NULL CHECK ("periodicidad" IN ('01', '02', '03', '04', '05')),
  "starts_on"    DATE NOT NULL,
  "ends_on"      DATE NOT NULL,
  "starts_at"    TIMESTAMPTZ(3) NOT NULL,
  "ends_at"      TIMESTAMPTZ(3) NOT NULL,
  "meses"        TEXT NOT NULL,
  "year"         INTEGER NOT NULL,
  -- issued: its globals were frozen (or wait in needs_data); empty: closed with no ticket to invoice.
  "status"       TEXT NOT NULL CHECK ("status" IN ('issued', 'empty')),
  "tickets"      INTEGER NOT NULL CHECK ("tickets" >= 0),
  "total"        DECIMAL(18, 2) NOT NULL CHECK ("total" >= 0),
  "parts"        INTEGER NOT NULL CHECK ("parts" >= 0),
  -- schedule | admin:<key id>
  "issued_by"    TEXT NOT NULL,
  "issued_at"    TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "global_periods_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "global_periods_range_check" CHECK ("starts_on" <= "ends_on" AND "starts_at" < "ends_at")
);
CREATE UNIQUE INDEX "global_periods_key" ON "global_periods"("emisor_id", "periodicidad", "starts_on");
CREATE INDEX "global_periods_issued_idx" ON "global_periods"("issued_at");
ALTER TABLE "global_periods" ADD CONSTRAINT "global_periods_emisor_id_fkey" FOREIGN KEY ("emisor_id") REFERENCES "emisores"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

ALTER TABLE "invoices" ADD COLUMN "global_period_id" UUID;
CREATE INDEX "invoices_global_period_idx" ON "invoices"("global_period_id") WHERE "global_period_id" IS NOT NULL;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_global_period_id_fkey" FOREIGN KEY ("global_period_id") REFERENCES "global_periods"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

CREATE TABLE "tickets" (
  "id"               UUID NOT NULL DEFAULT gen_random_uuid(),
  "emisor_id"        UUID NOT NULL,
  "payment_id"       UUID NOT NULL,
  -- Printed for the customer; with the total, what the self-invoicing page asks for.
  "code"             TEXT NOT NULL CHECK ("code" ~ '^[0-9A-Z]{10}$'),
  "total"            DECIMAL(18, 2) NOT NULL CHECK ("total" > 0),
  "refunded"         DECIMAL(18, 2) NOT NULL DEFAULT 0,
  "forma_pago"       TEXT NOT NULL,
  -- The sale's gross by tax profile ([{ taxes, amount }]): the concepto(s) of the ticket in a global.
  "parts"            JSONB NOT NULL,
  "periodicidad"     TEXT NOT NULL,
  "period_starts_on" DATE NOT NULL,
  -- open -> self_invoiced | in_global | refunded (the only moves, enforced below)
  "status"           TEXT NOT NULL DEFAULT 'open' CHECK ("status" IN ('open', 'self_invoiced', 'in_global', 'refunded')),
  -- Its own Ingreso (self_invoiced) or its global (in_global).
  "invoice_id"       UUID,
  "global_period_id" UUID,
  -- The capability in the self-invoicing page's download links (set when self-invoiced).
  "download_token"   TEXT UNIQUE,
  "occurred_at"      TIMESTAMPTZ(3) NOT NULL,
  "created_at"       TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at"       TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "tickets_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "tickets_refunded_check" CHECK ("refunded" >= 0 AND "refunded" <= "total"),
  CONSTRAINT "tickets_invoice_check" CHECK (("status" IN ('self_invoiced', 'in_global')) = ("invoice_id" IS NOT NULL)),
  CONSTRAINT "tickets_global_check" CHECK (("status" = 'in_global') = ("global_period_id" IS NOT NULL))
);
CREATE UNIQUE INDEX "tickets_payment_id_key" ON "tickets"("payment_id");
CREATE UNIQUE INDEX "tickets_code_key" ON "tickets"("emisor_id", "code");
CREATE INDEX "tickets_open_idx" ON "tickets"("emisor_id", "periodicidad", "period_starts_on") WHERE "status" = 'open';
CREATE INDEX "tickets_invoice_idx" ON "tickets"("invoice_id");
CREATE INDEX "tickets_created_idx" ON "tickets"("created_at");
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_emisor_id_fkey" FOREIGN KEY ("emisor_id") REFERENCES "emisores"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "tickets" ADD CONSTRAINT "tickets_global_period_id_fkey" FOREIGN KEY ("global_period_id") REFERENCES "global_periods"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- A ticket leaves `open` once, and its document never changes after: the state machine's one owner.
CREATE FUNCTION "timbra_tickets_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'tickets are never deleted (ticket %)', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF (NEW.emisor_id, NEW.payment_id, NEW.code, NEW.total, NEW.forma_pago, NEW.parts, NEW.periodicidad, NEW.occurred_at)
     IS DISTINCT FROM (OLD.emisor_id, OLD.payment_id, OLD.code, OLD.total, OLD.forma_pago, OLD.parts, OLD.periodicidad, OLD.occurred_at) THEN
    RAISE EXCEPTION 'ticket % cannot change what was sold', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.status <> 'open' AND (NEW.status, NEW.invoice_id, NEW.global_period_id, NEW.refunded, NEW.period_starts_on, NEW.download_token)
     IS DISTINCT FROM (OLD.status, OLD.invoice_id, OLD.global_period_id, OLD.refunded, OLD.period_starts_on, OLD.download_token) THEN
    RAISE EXCEPTION 'ticket % is % and cannot move', OLD.id, OLD.status USING ERRCODE = 'raise_exception';
  END IF;
  NEW.updated_at := CURRENT_TIMESTAMP;
  RETURN NEW;
END;
$$;
CREATE TRIGGER "tickets_guard" BEFORE UPDATE OR DELETE ON "tickets" FOR EACH ROW EXECUTE FUNCTION "timbra_tickets_guard"();

-- A period's row is written once, with its globals, and kept.
CREATE FUNCTION "timbra_global_periods_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a global period is written once (period %)', OLD.id USING ERRCODE = 'raise_exception';
END;
$$;
CREATE TRIGGER "global_periods_guard" BEFORE UPDATE OR DELETE ON "global_periods" FOR EACH ROW EXECUTE FUNCTION "timbra_global_periods_guard"();

ALTER TABLE "events" DROP CONSTRAINT "events_type";
ALTER TABLE "events" ADD CONSTRAINT "events_type" CHECK ("type" IN ('invoice.stamped', 'invoice.needs_data',
  'invoice.failed', 'invoice.cancelled', 'invoice.cancellation_rejected', 'payment.recorded', 'refund.recorded',
  'ticket.created', 'global.issued'));

-- Events for the merchant's webhooks (timbra_record_event, migration 20261213000000): a ticket's code
-- reaches the till that printed the sale (a Stripe or Mercado Pago sale's too), and a period's
-- globals are announced when issued (each global's invoice.stamped follows as for any invoice).
CREATE FUNCTION tickets_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_event('ticket.created', NULL, NEW.payment_id, NULL, jsonb_build_object(
    'id', NEW.id, 'paymentId', NEW.payment_id, 'code', NEW.code, 'total', NEW.total::text,
    'periodicidad', NEW.periodicidad, 'period', NEW.period_starts_on::text, 'occurredAt', NEW.occurred_at));
  RETURN NULL;
END $$;
CREATE TRIGGER tickets_record_event AFTER INSERT ON "tickets"
  FOR EACH ROW EXECUTE FUNCTION tickets_record_event();

CREATE FUNCTION global_periods_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_event('global.issued', NULL, NULL, NULL, jsonb_build_object(
    'id', NEW.id, 'periodicidad', NEW.periodicidad, 'startsOn', NEW.starts_on::text, 'endsOn', NEW.ends_on::text,
    'meses', NEW.meses, 'año', NEW.year, 'status', NEW.status, 'tickets', NEW.tickets, 'total', NEW.total::text,
    'parts', NEW.parts, 'issuedBy', NEW.issued_by));
  RETURN NULL;
END $$;
CREATE TRIGGER global_periods_record_event AFTER INSERT ON "global_periods"
  FOR EACH ROW EXECUTE FUNCTION global_periods_record_event();
