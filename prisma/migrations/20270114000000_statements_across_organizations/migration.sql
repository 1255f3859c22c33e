-- A statement may work for several organizations (issue #46: 1 000 organizations within 10% of one).
-- With payments spread over many organizations, each organization's batch holds one payment: each
-- stamp cost Postgres a statement, a commit and an app.org switch of its own (bench:e2e
-- --organizations 1000: 18 statements a stamped payment against 2.3 on one). The stamper now writes
-- a batch of several organizations' stamps in one statement. Its transaction names exactly the
-- organizations of its batch — app.org holds their ids, comma-separated — and the policies let it
-- see and write those organizations' rows and no others; each row in the statement is matched to
-- its own organization (@timbra/db outbox/stamping.ts). A session naming one organization is what
-- it was. What a row's organization defaults to is still the one organization named: with several
-- named there is none, so a write that does not name its row's organization fails (NOT NULL).

-- Every organization the session or transaction names (NULL when none), each written as a uuid
-- is (what the policies compare on text); a name that is not a uuid fails, as it did.
CREATE FUNCTION timbra_named_organizations() RETURNS text[] LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT string_to_array(nullif(current_setting('app.org', true), ''), ',')::uuid[]::text[]
$$;

-- The organization named, when exactly one is (else NULL). Still one expression, so it is inlined.
CREATE OR REPLACE FUNCTION timbra_organization() RETURNS uuid LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN strpos(current_setting('app.org', true), ',') = 0
              THEN nullif(current_setting('app.org', true), '')::uuid END
$$;

-- Several named: no default at all (not the sole organization's either).
CREATE OR REPLACE FUNCTION timbra_organization_or_sole() RETURNS uuid LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  named uuid := timbra_organization();
BEGIN
  IF named IS NOT NULL THEN
    RETURN named;
  END IF;
  IF strpos(current_setting('app.org', true), ',') > 0 THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT min(id::text)::uuid FROM emisores HAVING count(*) = 1);
END $$;

-- Each tenant table's policy: the row's organization is one of those named. As before, evaluated
-- once a statement (an InitPlan) and compared as text, so never taken for an index condition.
DO $$
DECLARE
  t text;
  col text;
BEGIN
  FOR t IN SELECT tablename FROM pg_policies WHERE schemaname = 'public' AND policyname = 'organization' LOOP
    col := CASE WHEN t = 'emisores' THEN 'id' ELSE 'organization_id' END;
    EXECUTE format('DROP POLICY organization ON %I', t);
    EXECUTE format('CREATE POLICY organization ON %I TO timbra_app '
                   'USING (%I::text = ANY ((SELECT timbra_named_organizations())::text[])) '
                   'WITH CHECK (%I::text = ANY ((SELECT timbra_named_organizations())::text[]))', t, col, col);
  END LOOP;
END $$;

-- Events carry their organization: the row's that the event reports, not the session's, so one
-- statement may write events of several organizations. A webhook endpoint and an email address are
-- matched to the event's organization, as each of them was by the policies alone.
DROP FUNCTION timbra_record_events(text[], uuid[], uuid[], uuid[], jsonb[]);
CREATE FUNCTION timbra_record_events(organizations uuid[], event_types text[], invoices uuid[], payments uuid[],
                                     refunds uuid[], objects jsonb[])
RETURNS void LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  sent bigint;
BEGIN
  WITH written AS (
    INSERT INTO events (organization_id, type, invoice_id, payment_id, refund_id, data)
    SELECT e.g, e.t, e.i, e.p, e.r, e.o
    FROM unnest(organizations, event_types, invoices, payments, refunds, objects) WITH ORDINALITY AS e(g, t, i, p, r, o, n)
    ORDER BY e.n
    RETURNING id, organization_id, type, payment_id
  ), webhooks AS (
    INSERT INTO deliveries (organization_id, channel, event_id, endpoint_id)
    SELECT w.organization_id, 'webhook', w.id, ep.id
    FROM written w JOIN webhook_endpoints ep
      ON ep.organization_id = w.organization_id AND ep.status = 'enabled'
         AND (w.type = ANY (ep.events) OR '*' = ANY (ep.events))
    RETURNING 1
  ), emails AS (
    INSERT INTO deliveries (organization_id, channel, event_id, recipient)
    SELECT w.organization_id, 'email', w.id, p.email
    FROM written w JOIN payments p ON p.id = w.payment_id AND p.organization_id = w.organization_id
    WHERE w.type IN ('invoice.stamped', 'invoice.cancelled') AND p.email IS NOT NULL
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM emails) INTO sent;
  IF sent > 0 THEN
    PERFORM pg_notify('timbra_deliveries', '');
  END IF;
END $$;

-- One event (refunds', tickets' and globals' row triggers): the session's one organization, else the
-- sole one (the owner's tools), as the events' column defaulted to before.
CREATE OR REPLACE FUNCTION timbra_record_event(event_type text, invoice uuid, payment uuid, refund uuid, object jsonb)
RETURNS void LANGUAGE sql AS $$
  SELECT timbra_record_events(ARRAY[timbra_organization_or_sole()], ARRAY[event_type], ARRAY[invoice], ARRAY[payment],
                              ARRAY[refund], ARRAY[object])
$$;

CREATE OR REPLACE FUNCTION invoices_record_events_inserted() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM timbra_record_events(array_agg(n.organization_id), array_agg('invoice.needs_data'::text), array_agg(n.id),
                               array_agg(n.payment_id), array_agg(NULL::uuid), array_agg(timbra_invoice_object(n::invoices)))
  FROM inserted n WHERE n.status = 'needs_data'
  HAVING count(*) > 0;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION invoices_record_events_updated() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM timbra_record_events(array_agg(c.organization_id), array_agg(c.type), array_agg(c.id),
                               array_agg(c.payment_id), array_agg(NULL::uuid), array_agg(c.object))
  FROM (
    SELECT n.organization_id, n.id, n.payment_id, timbra_invoice_object(n::invoices) AS object,
           CASE
             WHEN n.status = 'stamped' AND o.status = 'cancel_requested' THEN 'invoice.cancellation_rejected'
             WHEN n.status = 'stamped' THEN 'invoice.stamped'
             WHEN n.status = 'stamp_failed' THEN 'invoice.failed'
             WHEN n.status = 'cancelled' THEN 'invoice.cancelled'
             WHEN n.status = 'needs_data' THEN 'invoice.needs_data'
           END AS type
    FROM after_update n JOIN before_update o ON o.id = n.id AND o.organization_id = n.organization_id
    WHERE n.status IS DISTINCT FROM o.status
  ) c
  WHERE c.type IS NOT NULL
  HAVING count(*) > 0;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION payments_record_events() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM timbra_record_events(array_agg(n.organization_id), array_agg('payment.recorded'::text), array_agg(NULL::uuid),
    array_agg(n.id), array_agg(NULL::uuid),
    array_agg(jsonb_build_object(
      'id', n.id, 'provider', n.provider, 'externalId', n.external_id, 'amount', n.amount::text,
      'currency', n.currency, 'occurredAt', n.occurred_at, 'paymentTerms', n.payment_terms,
      'customerId', n.customer_id, 'metadata', n.metadata)))
  FROM inserted n
  HAVING count(*) > 0;
  RETURN NULL;
END $$;
