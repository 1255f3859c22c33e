-- The worker's backlog gauges for every organization, one statement a scrape.
--
-- timbra_late_invoices: the one statement of which pending invoices are late (their Fecha leaves the
-- PACs' window within the margin, or has left it; not ambiguous; no correction under way). Fecha is
-- local time, read in Mexico's easternmost zone (the earliest instant it can denote: up to 3 h early
-- in the Pacific zones, never late), against the application's clock (`at`). SECURITY INVOKER: an
-- organization's session sees its own invoices (the worker's AUTO_REFREEZE_LATE pass).
CREATE FUNCTION timbra_late_invoices(window_ms float8, margin_ms float8, at timestamptz)
  RETURNS TABLE (id uuid, organization uuid, frozen_at timestamptz)
  LANGUAGE sql STABLE SET search_path = pg_catalog, public AS $$
    SELECT i.id, i.emisor_id, i.fecha::timestamp AT TIME ZONE 'America/Cancun'
    FROM invoices i
    WHERE i.status = 'pending'
      AND i.fecha::timestamp AT TIME ZONE 'America/Cancun' < at - make_interval(secs => (window_ms - margin_ms) / 1000)
      AND NOT EXISTS (SELECT 1 FROM invoice_corrections c WHERE c.invoice_id = i.id AND c.status = 'proving')
      AND NOT EXISTS (SELECT 1 FROM pac_attempts a WHERE a.invoice_id = i.id AND a.version = i.version
                                                   AND a.outcome IN ('ambiguous', 'in_flight'))
  $$;
GRANT EXECUTE ON FUNCTION timbra_late_invoices(float8, float8, timestamptz) TO timbra_app;

-- timbra_backlog: what waits, an organization a row — every organization with something waiting, and
-- `include` (or the session's own organization) even with nothing. SECURITY INVOKER: an
-- organization's session gets its own row only (the policies); timbra_backlog_everywhere below gets
-- every organization's. Counts and ages only, never a row's content.
CREATE TYPE timbra_backlog_row AS (
  organization uuid,
  outbox_pending int, outbox_enqueued int, outbox_held int, outbox_failed int, outbox_oldest_age float8,
  needs_data int, needs_data_oldest_age float8,
  late int,
  corrections_proving int, corrections_oldest_age float8,
  reversed_refunds_standing int,
  email_pending int, email_oldest_age float8, email_dead int,
  webhook_pending int, webhook_oldest_age float8, webhook_dead int,
  endpoints_disabled int
);
CREATE FUNCTION timbra_backlog(late_window_ms float8, late_margin_ms float8, at timestamptz, include uuid)
  RETURNS SETOF timbra_backlog_row
  LANGUAGE sql STABLE SET search_path = pg_catalog, public AS $$
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
      SELECT emisor_id AS org, count(*)::int AS n, EXTRACT(EPOCH FROM now() - min(created_at))::float8 AS oldest
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
  $$;
GRANT EXECUTE ON FUNCTION timbra_backlog(float8, float8, timestamptz, uuid) TO timbra_app;

-- Every organization's row, for a session that names none (platform mode's worker): the same
-- function run with its owner's rights.
CREATE FUNCTION timbra_backlog_everywhere(late_window_ms float8, late_margin_ms float8, at timestamptz, include uuid)
  RETURNS SETOF timbra_backlog_row
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
    SELECT * FROM public.timbra_backlog(late_window_ms, late_margin_ms, at, include)
  $$;
REVOKE ALL ON FUNCTION timbra_backlog_everywhere(float8, float8, timestamptz, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION timbra_backlog_everywhere(float8, float8, timestamptz, uuid) TO timbra_app;
