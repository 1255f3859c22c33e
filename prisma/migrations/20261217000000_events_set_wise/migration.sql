-- The events of invoices and payments written set-wise (issue #21). Their row-level triggers
-- (migration 20261213000000) wrote each event, its deliveries and its NOTIFY with four statements a
-- row: a third of the cost of the stamper's UPDATE of an invoice to `stamped`, and the same again for
-- each payment the API records. The triggers now fire once a statement, over the statement's rows
-- (transition tables), and `timbra_record_events` writes every event of the statement, its webhook
-- and email deliveries and one NOTIFY in one statement. What is written is unchanged: an event per
-- row whose change it reports, in the transaction of that change.

-- The one owner of what an event fans out to: an event for each element of the arrays (same length),
-- a delivery to each enabled webhook endpoint subscribed to its type, an email to the payment's
-- address for invoice.stamped and invoice.cancelled, and one NOTIFY when anything is to be sent (a
-- hint: the dispatcher also polls; the payload is not read, so one per transaction is enough).
CREATE FUNCTION timbra_record_events(event_types text[], invoices uuid[], payments uuid[], refunds uuid[], objects jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  sent bigint;
BEGIN
  WITH written AS (
    INSERT INTO events (type, invoice_id, payment_id, refund_id, data)
    SELECT e.t, e.i, e.p, e.r, e.o
    FROM unnest(event_types, invoices, payments, refunds, objects) WITH ORDINALITY AS e(t, i, p, r, o, n)
    ORDER BY e.n
    RETURNING id, type, payment_id
  ), webhooks AS (
    INSERT INTO deliveries (channel, event_id, endpoint_id)
    SELECT 'webhook', w.id, ep.id
    FROM written w JOIN webhook_endpoints ep
      ON ep.status = 'enabled' AND (w.type = ANY (ep.events) OR '*' = ANY (ep.events))
    RETURNING 1
  ), emails AS (
    INSERT INTO deliveries (channel, event_id, recipient)
    SELECT 'email', w.id, p.email
    FROM written w JOIN payments p ON p.id = w.payment_id
    WHERE w.type IN ('invoice.stamped', 'invoice.cancelled') AND p.email IS NOT NULL
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM emails) INTO sent;
  IF sent > 0 THEN
    PERFORM pg_notify('timbra_deliveries', '');
  END IF;
END $$;

-- One event: the refunds', tickets' and globals' row triggers (a few a day) still call this.
CREATE OR REPLACE FUNCTION timbra_record_event(event_type text, invoice uuid, payment uuid, refund uuid, object jsonb)
RETURNS void LANGUAGE sql AS $$
  SELECT timbra_record_events(ARRAY[event_type], ARRAY[invoice], ARRAY[payment], ARRAY[refund], ARRAY[object])
$$;

DROP TRIGGER invoices_record_event ON "invoices";
DROP FUNCTION invoices_record_event();
DROP TRIGGER payments_record_event ON "payments";
DROP FUNCTION payments_record_event();

-- An invoice written as needs_data (money arrived, no CFDI yet).
CREATE FUNCTION invoices_record_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_events(array_agg('invoice.needs_data'::text), array_agg(n.id), array_agg(n.payment_id),
                               array_agg(NULL::uuid), array_agg(timbra_invoice_object(n::invoices)))
  FROM inserted n WHERE n.status = 'needs_data'
  HAVING count(*) > 0;
  RETURN NULL;
END $$;
CREATE TRIGGER invoices_record_events_inserted AFTER INSERT ON "invoices"
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION invoices_record_events_inserted();

-- An invoice whose status moved. (A trigger with transition tables cannot name columns: it fires on
-- every UPDATE of invoices, and reports only the rows whose status changed.)
CREATE FUNCTION invoices_record_events_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_events(array_agg(c.type), array_agg(c.id), array_agg(c.payment_id),
                               array_agg(NULL::uuid), array_agg(c.object))
  FROM (
    SELECT n.id, n.payment_id, timbra_invoice_object(n::invoices) AS object,
           CASE
             WHEN n.status = 'stamped' AND o.status = 'cancel_requested' THEN 'invoice.cancellation_rejected'
             WHEN n.status = 'stamped' THEN 'invoice.stamped'
             WHEN n.status = 'stamp_failed' THEN 'invoice.failed'
             WHEN n.status = 'cancelled' THEN 'invoice.cancelled'
             WHEN n.status = 'needs_data' THEN 'invoice.needs_data'
           END AS type
    FROM after_update n JOIN before_update o ON o.id = n.id
    WHERE n.status IS DISTINCT FROM o.status
  ) c
  WHERE c.type IS NOT NULL
  HAVING count(*) > 0;
  RETURN NULL;
END $$;
CREATE TRIGGER invoices_record_events_updated AFTER UPDATE ON "invoices"
  REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update
  FOR EACH STATEMENT EXECUTE FUNCTION invoices_record_events_updated();

CREATE FUNCTION payments_record_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_events(array_agg('payment.recorded'::text), array_agg(NULL::uuid), array_agg(n.id), array_agg(NULL::uuid),
    array_agg(jsonb_build_object(
      'id', n.id, 'provider', n.provider, 'externalId', n.external_id, 'amount', n.amount::text,
      'currency', n.currency, 'occurredAt', n.occurred_at, 'paymentTerms', n.payment_terms,
      'customerId', n.customer_id)))
  FROM inserted n
  HAVING count(*) > 0;
  RETURN NULL;
END $$;
CREATE TRIGGER payments_record_events AFTER INSERT ON "payments"
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION payments_record_events();
