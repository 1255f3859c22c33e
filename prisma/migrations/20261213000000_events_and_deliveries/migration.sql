-- Events and their deliveries (issue #19): the customer's email and the merchant's webhooks.
--
-- An event is written by a trigger in the transaction of the change it reports (an invoice's status
-- move, a payment or a refund recorded), so no code path can change a status without its event, and
-- no event exists for a change that rolled back. Each event fans out, in the same transaction, into
-- one delivery per enabled webhook endpoint that subscribes to its type and, for invoice.stamped and
-- invoice.cancelled, one email to the payment's address. The worker delivers them at least once.

-- 1. The customer's address, copied to the payment when it is recorded (like its fiscal data).
ALTER TABLE "payments" ADD COLUMN "email" TEXT;
ALTER TABLE "payments" ADD CONSTRAINT "payments_email_shape" CHECK ("email" IS NULL OR ("email" ~ '^[^@\s]+@[^@\s]+$' AND length("email") <= 254));

-- 2. Events: what happened, once.
CREATE TABLE "events" (
  "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  "type" TEXT NOT NULL,
  "invoice_id" UUID,
  "payment_id" UUID,
  "refund_id" UUID,
  -- The event's object as it was when it happened (amounts as decimal strings): a webhook's `data`.
  "data" JSONB NOT NULL,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "events_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "events_type" CHECK ("type" IN ('invoice.stamped', 'invoice.needs_data', 'invoice.failed',
    'invoice.cancelled', 'invoice.cancellation_rejected', 'payment.recorded', 'refund.recorded')),
  CONSTRAINT "events_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  CONSTRAINT "events_payment_id_fkey" FOREIGN KEY ("payment_id") REFERENCES "payments"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  CONSTRAINT "events_refund_id_fkey" FOREIGN KEY ("refund_id") REFERENCES "refunds"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "events_invoice_id_idx" ON "events"("invoice_id");
CREATE INDEX "events_created_at_idx" ON "events"("created_at");

-- 3. The merchant's webhook endpoints. The secret signs every delivery; the API shows it once.
CREATE TABLE "webhook_endpoints" (
  "id" UUID NOT NULL,
  "url" TEXT NOT NULL,
  "events" TEXT[] NOT NULL,
  "secret" TEXT NOT NULL,
  -- After a rotation, the secret before it: deliveries carry a signature with each until it expires.
  "previous_secret" TEXT,
  "previous_secret_expires_at" TIMESTAMPTZ(3),
  "description" TEXT,
  -- enabled | disabled (by an operator, or after a failure streak: disabled_reason says which)
  "status" TEXT NOT NULL DEFAULT 'enabled',
  "disabled_reason" TEXT,
  "disabled_at" TIMESTAMPTZ(3),
  -- The current failure streak: consecutive failed attempts, and when the first of them failed.
  "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
  "failing_since" TIMESTAMPTZ(3),
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "webhook_endpoints_status" CHECK ("status" IN ('enabled', 'disabled'))
);

-- 4. Deliveries: the delivery outbox. One row per (event, endpoint) or (event, email address), plus
-- one per replay or resend. The worker claims due rows (pending, or sending with an expired lease:
-- its worker died mid-send), sends, and records each attempt in delivery_attempts.
CREATE TABLE "deliveries" (
  "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  -- email | webhook
  "channel" TEXT NOT NULL,
  "event_id" UUID NOT NULL,
  "endpoint_id" UUID,
  "recipient" TEXT,
  -- pending | sending | delivered | dead
  "status" TEXT NOT NULL DEFAULT 'pending',
  "attempts" INTEGER NOT NULL DEFAULT 0,
  "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "lease_until" TIMESTAMPTZ(3),
  "last_error" TEXT,
  "delivered_at" TIMESTAMPTZ(3),
  -- A replay (webhook) or resend (email): the delivery it repeats, and who asked.
  "replay_of" UUID,
  "requested_by" TEXT,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "deliveries_channel" CHECK ("channel" IN ('email', 'webhook')),
  CONSTRAINT "deliveries_status" CHECK ("status" IN ('pending', 'sending', 'delivered', 'dead')),
  CONSTRAINT "deliveries_target" CHECK (("channel" = 'webhook') = ("endpoint_id" IS NOT NULL) AND ("channel" = 'email') = ("recipient" IS NOT NULL)),
  CONSTRAINT "deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  CONSTRAINT "deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
  CONSTRAINT "deliveries_replay_of_fkey" FOREIGN KEY ("replay_of") REFERENCES "deliveries"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "deliveries_event_id_idx" ON "deliveries"("event_id");
CREATE INDEX "deliveries_endpoint_id_created_at_idx" ON "deliveries"("endpoint_id", "created_at");
CREATE INDEX "deliveries_due_idx" ON "deliveries"("available_at") WHERE "status" IN ('pending', 'sending');
-- An event reaches an endpoint or an address once (replays and resends aside).
CREATE UNIQUE INDEX "deliveries_once_webhook" ON "deliveries"("event_id", "endpoint_id") WHERE "replay_of" IS NULL AND "channel" = 'webhook';
CREATE UNIQUE INDEX "deliveries_once_email" ON "deliveries"("event_id", "recipient") WHERE "replay_of" IS NULL AND "channel" = 'email';

-- 5. The delivery log: every attempt, append-only.
CREATE TABLE "delivery_attempts" (
  "id" UUID NOT NULL DEFAULT gen_random_uuid(),
  "delivery_id" UUID NOT NULL,
  "attempt" INTEGER NOT NULL,
  -- delivered | failed (will retry) | dead (permanent, or out of time)
  "outcome" TEXT NOT NULL,
  -- The receiver's HTTP status, or the SMTP server's reply code.
  "status_code" INTEGER,
  "error" TEXT,
  "duration_ms" INTEGER NOT NULL,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "delivery_attempts_outcome" CHECK ("outcome" IN ('delivered', 'failed', 'dead')),
  CONSTRAINT "delivery_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "deliveries"("id") ON DELETE RESTRICT ON UPDATE CASCADE
);
CREATE INDEX "delivery_attempts_delivery_id_idx" ON "delivery_attempts"("delivery_id");

CREATE FUNCTION delivery_attempts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'delivery_attempts is append-only';
END $$;
CREATE TRIGGER delivery_attempts_append_only BEFORE UPDATE OR DELETE ON "delivery_attempts"
  FOR EACH ROW EXECUTE FUNCTION delivery_attempts_append_only();

-- 6. The events' writers.

-- An invoice as an event's object.
CREATE FUNCTION timbra_invoice_object(i invoices) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', i.id, 'kind', i.kind, 'serie', i.serie, 'folio', i.folio, 'status', i.status,
    'uuid', i.uuid, 'total', i.total::text, 'currency', i.moneda, 'paymentId', i.payment_id,
    'relatedInvoiceId', i.related_invoice_id, 'version', i.version, 'problems', i.problems)
$$;

-- An event and its deliveries, announced to the worker (a hint: it also polls).
CREATE FUNCTION timbra_record_event(event_type text, invoice uuid, payment uuid, refund uuid, object jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  event_id uuid;
  address text;
  written integer;
  emails integer := 0;
BEGIN
  INSERT INTO events (type, invoice_id, payment_id, refund_id, data)
    VALUES (event_type, invoice, payment, refund, object) RETURNING id INTO event_id;
  INSERT INTO deliveries (channel, event_id, endpoint_id)
    SELECT 'webhook', event_id, e.id FROM webhook_endpoints e
    WHERE e.status = 'enabled' AND (event_type = ANY (e.events) OR '*' = ANY (e.events));
  GET DIAGNOSTICS written = ROW_COUNT;
  IF event_type IN ('invoice.stamped', 'invoice.cancelled') AND payment IS NOT NULL THEN
    SELECT p.email INTO address FROM payments p WHERE p.id = payment;
    IF address IS NOT NULL THEN
      INSERT INTO deliveries (channel, event_id, recipient) VALUES ('email', event_id, address);
      emails := 1;
    END IF;
  END IF;
  -- Only when there is something to send: the dispatchers are not woken for nothing.
  IF written + emails > 0 THEN
    PERFORM pg_notify('timbra_deliveries', event_id::text);
  END IF;
END $$;

CREATE FUNCTION invoices_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_type text;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status = 'needs_data' THEN event_type := 'invoice.needs_data'; END IF;
  ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
    event_type := CASE
      WHEN NEW.status = 'stamped' AND OLD.status = 'cancel_requested' THEN 'invoice.cancellation_rejected'
      WHEN NEW.status = 'stamped' THEN 'invoice.stamped'
      WHEN NEW.status = 'stamp_failed' THEN 'invoice.failed'
      WHEN NEW.status = 'cancelled' THEN 'invoice.cancelled'
      WHEN NEW.status = 'needs_data' THEN 'invoice.needs_data'
    END;
  END IF;
  IF event_type IS NOT NULL THEN
    PERFORM timbra_record_event(event_type, NEW.id, NEW.payment_id, NULL, timbra_invoice_object(NEW));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER invoices_record_event AFTER INSERT OR UPDATE OF status ON "invoices"
  FOR EACH ROW EXECUTE FUNCTION invoices_record_event();

CREATE FUNCTION payments_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_event('payment.recorded', NULL, NEW.id, NULL, jsonb_build_object(
    'id', NEW.id, 'provider', NEW.provider, 'externalId', NEW.external_id, 'amount', NEW.amount::text,
    'currency', NEW.currency, 'occurredAt', NEW.occurred_at, 'paymentTerms', NEW.payment_terms,
    'customerId', NEW.customer_id));
  RETURN NULL;
END $$;
CREATE TRIGGER payments_record_event AFTER INSERT ON "payments"
  FOR EACH ROW EXECUTE FUNCTION payments_record_event();

CREATE FUNCTION refunds_record_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_event('refund.recorded', NULL, NEW.payment_id, NEW.id, jsonb_build_object(
    'id', NEW.id, 'paymentId', NEW.payment_id, 'provider', NEW.provider, 'externalId', NEW.external_id,
    'amount', NEW.amount::text, 'occurredAt', NEW.occurred_at));
  RETURN NULL;
END $$;
CREATE TRIGGER refunds_record_event AFTER INSERT ON "refunds"
  FOR EACH ROW EXECUTE FUNCTION refunds_record_event();
