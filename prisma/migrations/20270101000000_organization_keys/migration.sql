-- One name for the organization column, and every key of a tenant table holding it.
--
-- Distributing the tables by organization (Citus: deploy/citus/distribute.sql) needs every primary
-- key, unique index and foreign key between distributed tables to include the distribution column.
-- Here series, invoices, global_periods, tickets and csds call it organization_id like the rest;
-- each distributed table's primary key becomes (id, organization_id), id first so that a lookup by
-- id uses it as before; each unique index gets organization_id last; each foreign key between them
-- names both columns. The reference tables (emisores, api_clients, provider_accounts,
-- invoice_status_transitions) keep theirs: they route a request before its organization is known.
-- On a large database this rebuilds the indexes of every tenant table: plan a window for it.

-- 1. The name.
ALTER TABLE series RENAME COLUMN emisor_id TO organization_id;
ALTER TABLE invoices RENAME COLUMN emisor_id TO organization_id;
ALTER TABLE global_periods RENAME COLUMN emisor_id TO organization_id;
ALTER TABLE tickets RENAME COLUMN emisor_id TO organization_id;
ALTER TABLE csds RENAME COLUMN emisor_id TO organization_id;
ALTER TABLE series RENAME CONSTRAINT series_emisor_id_fkey TO series_organization_id_fkey;
ALTER TABLE invoices RENAME CONSTRAINT invoices_emisor_id_fkey TO invoices_organization_id_fkey;
ALTER TABLE global_periods RENAME CONSTRAINT global_periods_emisor_id_fkey TO global_periods_organization_id_fkey;
ALTER TABLE tickets RENAME CONSTRAINT tickets_emisor_id_fkey TO tickets_organization_id_fkey;
ALTER TABLE csds RENAME CONSTRAINT csds_emisor_id_fkey TO csds_organization_id_fkey;
ALTER INDEX series_emisor_id_serie_key RENAME TO series_organization_id_serie_key;
ALTER INDEX invoices_emisor_id_serie_folio_key RENAME TO invoices_organization_id_serie_folio_key;

-- Functions keep their bodies as text: those that named emisor_id, again with the new name.
CREATE OR REPLACE FUNCTION timbra_tickets_guard()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'tickets are never deleted (ticket %)', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF (NEW.organization_id, NEW.payment_id, NEW.code, NEW.total, NEW.forma_pago, NEW.parts, NEW.periodicidad, NEW.occurred_at)
     IS DISTINCT FROM (OLD.organization_id, OLD.payment_id, OLD.code, OLD.total, OLD.forma_pago, OLD.parts, OLD.periodicidad, OLD.occurred_at) THEN
    RAISE EXCEPTION 'ticket % cannot change what was sold', OLD.id USING ERRCODE = 'raise_exception';
  END IF;
  IF OLD.status <> 'open' AND (NEW.status, NEW.invoice_id, NEW.global_period_id, NEW.refunded, NEW.period_starts_on, NEW.download_token)
     IS DISTINCT FROM (OLD.status, OLD.invoice_id, OLD.global_period_id, OLD.refunded, OLD.period_starts_on, OLD.download_token) THEN
    RAISE EXCEPTION 'ticket % is % and cannot move', OLD.id, OLD.status USING ERRCODE = 'raise_exception';
  END IF;
  NEW.updated_at := CURRENT_TIMESTAMP;
  RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION timbra_late_invoices(window_ms double precision, margin_ms double precision, at timestamp with time zone)
 RETURNS TABLE(id uuid, organization uuid, frozen_at timestamp with time zone)
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'public'
AS $function$
    SELECT i.id, i.organization_id, i.fecha::timestamp AT TIME ZONE 'America/Cancun'
    FROM invoices i
    WHERE i.status = 'pending'
      AND i.fecha::timestamp AT TIME ZONE 'America/Cancun' < at - make_interval(secs => (window_ms - margin_ms) / 1000)
      AND NOT EXISTS (SELECT 1 FROM invoice_corrections c WHERE c.invoice_id = i.id AND c.status = 'proving')
      AND NOT EXISTS (SELECT 1 FROM pac_attempts a WHERE a.invoice_id = i.id AND a.version = i.version
                                                   AND a.outcome IN ('ambiguous', 'in_flight'))
  $function$;

CREATE OR REPLACE FUNCTION timbra_csd_validity()
 RETURNS TABLE(organization_id uuid, rfc text, no_certificado text, valid_from timestamp with time zone, valid_to timestamp with time zone, active_from timestamp with time zone)
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public'
AS $function$
    SELECT organization_id, rfc, no_certificado, valid_from, valid_to, active_from FROM public.csds
  $function$;

CREATE OR REPLACE FUNCTION timbra_backlog(late_window_ms double precision, late_margin_ms double precision, at timestamp with time zone, include uuid)
 RETURNS SETOF timbra_backlog_row
 LANGUAGE sql
 STABLE
 SET search_path TO 'pg_catalog', 'public'
AS $function$
    WITH
    outbox_open AS (
      SELECT organization_id AS org,
        count(*) FILTER (WHERE status = 'pending')::int AS pending,
        count(*) FILTER (WHERE status = 'enqueued')::int AS enqueued,
        count(*) FILTER (WHERE status = 'held')::int AS held,
        count(*) FILTER (WHERE status = 'failed')::int AS failed,
        EXTRACT(EPOCH FROM now() - min(created_at) FILTER (WHERE status IN ('pending', 'enqueued')))::float8 AS oldest
      FROM outbox WHERE status <> 'done' GROUP BY 1),
    needs AS (
      SELECT organization_id AS org, count(*)::int AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS oldest
      FROM invoices WHERE status = 'needs_data' GROUP BY 1),
    late AS (SELECT l.organization AS org, count(*)::int AS n FROM timbra_late_invoices(late_window_ms, late_margin_ms, at) l GROUP BY 1),
    proving AS (
      SELECT organization_id AS org, count(*)::int AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS oldest
      FROM invoice_corrections WHERE status = 'proving' GROUP BY 1),
    reversed AS (
      SELECT r.organization_id AS org, count(*)::int AS n
      FROM refunds r JOIN invoices e ON e.refund_id = r.id
      WHERE r.status = 'reversed' AND e.status NOT IN ('cancel_requested', 'cancelled') GROUP BY 1),
    deliveries_open AS (
      SELECT d.organization_id AS org,
        count(*) FILTER (WHERE d.channel = 'email' AND d.status IN ('pending', 'sending'))::int AS email_pending,
        EXTRACT(EPOCH FROM now() - min(d.created_at) FILTER (WHERE d.channel = 'email' AND d.status IN ('pending', 'sending')))::float8 AS email_oldest,
        count(*) FILTER (WHERE d.channel = 'webhook' AND d.status IN ('pending', 'sending'))::int AS webhook_pending,
        EXTRACT(EPOCH FROM now() - min(d.created_at) FILTER (WHERE d.channel = 'webhook' AND d.status IN ('pending', 'sending')))::float8 AS webhook_oldest,
        -- dead, and no replay delivered or on its way since: what waits for a person
        count(*) FILTER (WHERE d.channel = 'email' AND d.status = 'dead' AND NOT EXISTS (
          SELECT 1 FROM deliveries r WHERE r.replay_of = d.id AND r.status IN ('delivered', 'pending', 'sending')))::int AS email_dead,
        count(*) FILTER (WHERE d.channel = 'webhook' AND d.status = 'dead' AND NOT EXISTS (
          SELECT 1 FROM deliveries r WHERE r.replay_of = d.id AND r.status IN ('delivered', 'pending', 'sending')))::int AS webhook_dead
      FROM deliveries d WHERE d.status IN ('pending', 'sending', 'dead') GROUP BY 1),
    disabled AS (
      -- disabled after a failure streak (an operator's own disabling is not counted)
      SELECT organization_id AS org, count(*)::int AS n
      FROM webhook_endpoints WHERE status = 'disabled' AND disabled_reason LIKE 'failing since %' GROUP BY 1),
    orgs AS (
      SELECT org FROM outbox_open UNION SELECT org FROM needs UNION SELECT org FROM late
      UNION SELECT org FROM proving UNION SELECT org FROM reversed UNION SELECT org FROM deliveries_open
      UNION SELECT org FROM disabled
      UNION SELECT coalesce(include, timbra_organization()) WHERE coalesce(include, timbra_organization()) IS NOT NULL)
    SELECT o.org,
      coalesce(ob.pending, 0), coalesce(ob.enqueued, 0), coalesce(ob.held, 0), coalesce(ob.failed, 0), coalesce(ob.oldest, 0),
      coalesce(nd.n, 0), coalesce(nd.oldest, 0),
      coalesce(lt.n, 0),
      coalesce(pr.n, 0), coalesce(pr.oldest, 0),
      coalesce(rv.n, 0),
      coalesce(dl.email_pending, 0), coalesce(dl.email_oldest, 0), coalesce(dl.email_dead, 0),
      coalesce(dl.webhook_pending, 0), coalesce(dl.webhook_oldest, 0), coalesce(dl.webhook_dead, 0),
      coalesce(ds.n, 0)
    FROM orgs o
    LEFT JOIN outbox_open ob ON ob.org = o.org
    LEFT JOIN needs nd ON nd.org = o.org
    LEFT JOIN late lt ON lt.org = o.org
    LEFT JOIN proving pr ON pr.org = o.org
    LEFT JOIN reversed rv ON rv.org = o.org
    LEFT JOIN deliveries_open dl ON dl.org = o.org
    LEFT JOIN disabled ds ON ds.org = o.org
    ORDER BY o.org
  $function$;

CREATE OR REPLACE FUNCTION timbra_correction_organizations(late_before timestamp with time zone)
 RETURNS SETOF uuid
 LANGUAGE sql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public'
AS $function$
    WITH RECURSIVE orgs(id) AS (
      (SELECT organization_id FROM public.invoice_corrections WHERE status = 'proving'
       ORDER BY organization_id LIMIT 1)
      UNION ALL
      SELECT (SELECT c.organization_id FROM public.invoice_corrections c
              WHERE c.status = 'proving' AND c.organization_id > orgs.id
              ORDER BY c.organization_id LIMIT 1)
      FROM orgs WHERE orgs.id IS NOT NULL
    )
    SELECT id FROM orgs WHERE id IS NOT NULL
    UNION
    -- invoices_pending_idx (created_at) WHERE status = 'pending': the old pending ones are few.
    SELECT DISTINCT organization_id FROM public.invoices
    WHERE late_before IS NOT NULL AND status = 'pending' AND created_at < late_before
  $function$;

-- 2. Foreign keys between distributed tables, dropped while their keys change.
ALTER TABLE payments DROP CONSTRAINT payments_customer_id_fkey;
ALTER TABLE refunds DROP CONSTRAINT refunds_payment_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_global_period_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_installment_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_payment_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_refund_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_related_invoice_id_fkey;
ALTER TABLE invoices DROP CONSTRAINT invoices_replaces_invoice_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_cancel_request_id_fkey;
ALTER TABLE outbox DROP CONSTRAINT outbox_invoice_id_fkey;
ALTER TABLE pac_attempts DROP CONSTRAINT pac_attempts_invoice_id_fkey;
ALTER TABLE installments DROP CONSTRAINT installments_invoice_id_fkey;
ALTER TABLE cancel_requests DROP CONSTRAINT cancel_requests_invoice_id_fkey;
ALTER TABLE invoice_versions DROP CONSTRAINT invoice_versions_invoice_id_fkey;
ALTER TABLE invoice_corrections DROP CONSTRAINT invoice_corrections_invoice_id_fkey;
ALTER TABLE outbox_redrives DROP CONSTRAINT outbox_redrives_invoice_id_fkey;
ALTER TABLE outbox_redrives DROP CONSTRAINT outbox_redrives_outbox_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_invoice_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_payment_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_refund_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_replay_of_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
ALTER TABLE tickets DROP CONSTRAINT tickets_global_period_id_fkey;
ALTER TABLE tickets DROP CONSTRAINT tickets_invoice_id_fkey;
ALTER TABLE tickets DROP CONSTRAINT tickets_payment_id_fkey;

-- 3. Primary keys.
ALTER TABLE cancel_requests DROP CONSTRAINT cancel_requests_pkey, ADD CONSTRAINT cancel_requests_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE customers DROP CONSTRAINT customers_pkey, ADD CONSTRAINT customers_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey, ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey, ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE events DROP CONSTRAINT events_pkey, ADD CONSTRAINT events_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE global_periods DROP CONSTRAINT global_periods_pkey, ADD CONSTRAINT global_periods_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey, ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE installments DROP CONSTRAINT installments_pkey, ADD CONSTRAINT installments_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE invoice_corrections DROP CONSTRAINT invoice_corrections_pkey, ADD CONSTRAINT invoice_corrections_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE invoice_versions DROP CONSTRAINT invoice_versions_pkey, ADD CONSTRAINT invoice_versions_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE invoices DROP CONSTRAINT invoices_pkey, ADD CONSTRAINT invoices_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey, ADD CONSTRAINT outbox_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE outbox_redrives DROP CONSTRAINT outbox_redrives_pkey, ADD CONSTRAINT outbox_redrives_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE pac_attempts DROP CONSTRAINT pac_attempts_pkey, ADD CONSTRAINT pac_attempts_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE payments DROP CONSTRAINT payments_pkey, ADD CONSTRAINT payments_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE products DROP CONSTRAINT products_pkey, ADD CONSTRAINT products_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE refunds DROP CONSTRAINT refunds_pkey, ADD CONSTRAINT refunds_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE series DROP CONSTRAINT series_pkey, ADD CONSTRAINT series_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE tickets DROP CONSTRAINT tickets_pkey, ADD CONSTRAINT tickets_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey, ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id, organization_id);
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_pkey, ADD CONSTRAINT webhook_events_pkey PRIMARY KEY (id, organization_id);

-- 4. Unique indexes.
DROP INDEX cancel_requests_duplicate_uuid_key;
CREATE UNIQUE INDEX cancel_requests_duplicate_uuid_key ON cancel_requests (duplicate_uuid, organization_id);
DROP INDEX deliveries_once_email;
CREATE UNIQUE INDEX deliveries_once_email ON deliveries (event_id, recipient, organization_id) WHERE ((replay_of IS NULL) AND (channel = 'email'::text));
DROP INDEX deliveries_once_webhook;
CREATE UNIQUE INDEX deliveries_once_webhook ON deliveries (event_id, endpoint_id, organization_id) WHERE ((replay_of IS NULL) AND (channel = 'webhook'::text));
DROP INDEX idempotency_keys_client_id_key_key;
CREATE UNIQUE INDEX idempotency_keys_client_id_key_key ON idempotency_keys (client_id, key, organization_id);
DROP INDEX installments_invoice_id_num_parcialidad_key;
CREATE UNIQUE INDEX installments_invoice_id_num_parcialidad_key ON installments (invoice_id, num_parcialidad, organization_id);
DROP INDEX invoice_corrections_open_key;
CREATE UNIQUE INDEX invoice_corrections_open_key ON invoice_corrections (invoice_id, organization_id) WHERE (status = 'proving'::text);
DROP INDEX invoice_versions_invoice_id_version_key;
CREATE UNIQUE INDEX invoice_versions_invoice_id_version_key ON invoice_versions (invoice_id, version, organization_id);
DROP INDEX invoices_installment_id_key;
CREATE UNIQUE INDEX invoices_installment_id_key ON invoices (installment_id, organization_id);
DROP INDEX invoices_refund_id_key;
CREATE UNIQUE INDEX invoices_refund_id_key ON invoices (refund_id, organization_id);
DROP INDEX invoices_replaces_invoice_id_key;
CREATE UNIQUE INDEX invoices_replaces_invoice_id_key ON invoices (replaces_invoice_id, organization_id);
DROP INDEX invoices_stamp_key_key;
CREATE UNIQUE INDEX invoices_stamp_key_key ON invoices (stamp_key, organization_id);
DROP INDEX outbox_cancel_request_id_key;
CREATE UNIQUE INDEX outbox_cancel_request_id_key ON outbox (cancel_request_id, organization_id);
DROP INDEX outbox_stamp_key_key;
CREATE UNIQUE INDEX outbox_stamp_key_key ON outbox (stamp_key, organization_id);
ALTER TABLE tickets DROP CONSTRAINT tickets_download_token_key;
CREATE UNIQUE INDEX tickets_download_token_key ON tickets (download_token, organization_id);
DROP INDEX tickets_payment_id_key;
CREATE UNIQUE INDEX tickets_payment_id_key ON tickets (payment_id, organization_id);

-- 5. The foreign keys again, each naming the organization on both sides. Deleting a payment sets
-- its invoices' payment_id to null, never their organization.
ALTER TABLE payments ADD CONSTRAINT payments_customer_id_fkey
  FOREIGN KEY (customer_id, organization_id) REFERENCES customers (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE refunds ADD CONSTRAINT refunds_payment_id_fkey
  FOREIGN KEY (payment_id, organization_id) REFERENCES payments (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoices ADD CONSTRAINT invoices_global_period_id_fkey
  FOREIGN KEY (global_period_id, organization_id) REFERENCES global_periods (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoices ADD CONSTRAINT invoices_installment_id_fkey
  FOREIGN KEY (installment_id, organization_id) REFERENCES installments (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoices ADD CONSTRAINT invoices_payment_id_fkey
  FOREIGN KEY (payment_id, organization_id) REFERENCES payments (id, organization_id) ON DELETE SET NULL (payment_id);
ALTER TABLE invoices ADD CONSTRAINT invoices_refund_id_fkey
  FOREIGN KEY (refund_id, organization_id) REFERENCES refunds (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoices ADD CONSTRAINT invoices_related_invoice_id_fkey
  FOREIGN KEY (related_invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoices ADD CONSTRAINT invoices_replaces_invoice_id_fkey
  FOREIGN KEY (replaces_invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE outbox ADD CONSTRAINT outbox_cancel_request_id_fkey
  FOREIGN KEY (cancel_request_id, organization_id) REFERENCES cancel_requests (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE outbox ADD CONSTRAINT outbox_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE pac_attempts ADD CONSTRAINT pac_attempts_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE installments ADD CONSTRAINT installments_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE cancel_requests ADD CONSTRAINT cancel_requests_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoice_versions ADD CONSTRAINT invoice_versions_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE invoice_corrections ADD CONSTRAINT invoice_corrections_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE outbox_redrives ADD CONSTRAINT outbox_redrives_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE outbox_redrives ADD CONSTRAINT outbox_redrives_outbox_id_fkey
  FOREIGN KEY (outbox_id, organization_id) REFERENCES outbox (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE events ADD CONSTRAINT events_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE events ADD CONSTRAINT events_payment_id_fkey
  FOREIGN KEY (payment_id, organization_id) REFERENCES payments (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE events ADD CONSTRAINT events_refund_id_fkey
  FOREIGN KEY (refund_id, organization_id) REFERENCES refunds (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_endpoint_id_fkey
  FOREIGN KEY (endpoint_id, organization_id) REFERENCES webhook_endpoints (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey
  FOREIGN KEY (event_id, organization_id) REFERENCES events (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_replay_of_fkey
  FOREIGN KEY (replay_of, organization_id) REFERENCES deliveries (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_delivery_id_fkey
  FOREIGN KEY (delivery_id, organization_id) REFERENCES deliveries (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE tickets ADD CONSTRAINT tickets_global_period_id_fkey
  FOREIGN KEY (global_period_id, organization_id) REFERENCES global_periods (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE tickets ADD CONSTRAINT tickets_invoice_id_fkey
  FOREIGN KEY (invoice_id, organization_id) REFERENCES invoices (id, organization_id) ON DELETE RESTRICT;
ALTER TABLE tickets ADD CONSTRAINT tickets_payment_id_fkey
  FOREIGN KEY (payment_id, organization_id) REFERENCES payments (id, organization_id) ON DELETE RESTRICT;
