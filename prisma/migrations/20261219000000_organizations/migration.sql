-- Every tenant row carries its organization, and Postgres enforces it (issue #46, platform mode).
-- An organization is an emisor: its row in `emisores`. The tables that already named their emisor
-- (series, invoices, tickets, global_periods, csds) keep emisor_id as their organization column; every
-- other tenant table gains organization_id. Row-level security on all of them lets the application's
-- role, timbra_app (no BYPASSRLS), see and write only the rows of the organization its session or
-- transaction names in the setting app.org; with none named it sees nothing and writes nothing.
-- The apps connect as timbra_app with their organization (@timbra/db, createPrisma); migrations,
-- the start-up bootstrap and the tests' set-up SQL run as the database's owner, which RLS does not
-- restrict. invoice_status_transitions is a catalogue shared by all, and stays outside.

-- The organization the session or transaction works for; NULL when none is named. Policies compare
-- with it, so a session that names none matches no row.
CREATE FUNCTION timbra_organization() RETURNS uuid LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT nullif(current_setting('app.org', true), '')::uuid
$$;

-- What a new tenant row's organization column defaults to: the organization named, else, while the
-- deployment has exactly one, that one (what the owner's tools and older scripts write), else NULL,
-- which the NOT NULL refuses. For timbra_app the policies' WITH CHECK still requires the named one.
-- PL/pgSQL, the named organization first: a SQL function with a subquery cannot be inlined, and would
-- run through the SQL-function executor for every row the apps insert.
CREATE FUNCTION timbra_organization_or_sole() RETURNS uuid LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  named uuid := timbra_organization();
BEGIN
  IF named IS NOT NULL THEN
    RETURN named;
  END IF;
  RETURN (SELECT min(id::text)::uuid FROM emisores HAVING count(*) = 1);
END $$;

-- The new columns: existing rows belong to the deployment's one organization, written as the column's
-- stored default (no table rewrite, whatever the history's size). A database holding rows and not
-- exactly one emisor cannot say whose they are, and the migration stops. No foreign key: each would
-- add a trigger and a KEY SHARE lock on the organization's one row to every insert of the hot path
-- (events and deliveries are written by the set); the value comes from the session, the policies
-- check it, the apps open a session only for an organization that exists (assertIsolated), and an
-- emisor is never deleted (its invoices' foreign key already forbids it).
DO $$
DECLARE
  t text;
  has_rows boolean;
  sole uuid := (SELECT min(id::text)::uuid FROM emisores HAVING count(*) = 1);
BEGIN
  FOREACH t IN ARRAY ARRAY['webhook_events', 'payments', 'products', 'customers', 'refunds', 'installments',
                           'outbox', 'outbox_redrives', 'cancel_requests', 'pac_attempts', 'invoice_versions',
                           'invoice_corrections', 'api_clients', 'idempotency_keys', 'events',
                           'webhook_endpoints', 'deliveries', 'delivery_attempts'] LOOP
    IF sole IS NULL THEN
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', t) INTO has_rows;
      IF has_rows THEN
        RAISE EXCEPTION 'table % has rows and the database has % emisores: whose are they?', t,
          (SELECT count(*) FROM emisores);
      END IF;
      EXECUTE format('ALTER TABLE %I ADD COLUMN organization_id uuid NOT NULL', t);
    ELSE
      EXECUTE format('ALTER TABLE %I ADD COLUMN organization_id uuid NOT NULL DEFAULT %L', t, sole);
    END IF;
    EXECUTE format('ALTER TABLE %I ALTER COLUMN organization_id SET DEFAULT timbra_organization_or_sole()', t);
  END LOOP;
END $$;

-- The application's role: no login of its own (the apps' login switches to it), no BYPASSRLS. Roles
-- belong to the cluster, so an earlier database's migration may have made it already.
-- The owner (the migrations' login) is made a member, so the apps' login may switch to it.
DO $$
BEGIN
  BEGIN
    CREATE ROLE timbra_app NOLOGIN NOBYPASSRLS;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
  END;
  IF NOT pg_has_role(current_user, 'timbra_app', 'MEMBER') THEN
    EXECUTE format('GRANT timbra_app TO %I', current_user);
  END IF;
END $$;
GRANT USAGE ON SCHEMA public TO timbra_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO timbra_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO timbra_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO timbra_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO timbra_app;
-- The migrations' own record is the owner's.
REVOKE ALL ON "_prisma_migrations" FROM timbra_app;

-- One policy a tenant table, the same for reads and writes: the row's organization is the one named.
-- The function is called in a subquery, so a statement evaluates it once (an InitPlan), not once for
-- each row it reads. The comparison is written on text, so the planner never takes it for an index
-- condition: an index leading with the organization column (invoices' (emisor_id, serie, folio))
-- would otherwise tie with the primary key in plans made before the tables have statistics, and
-- scan every row of the organization for one invoice. It is a filter on rows already found.
DO $$
DECLARE
  t text;
  col text;
BEGIN
  FOR t, col IN
    SELECT c.table_name, c.column_name FROM information_schema.columns c
    WHERE c.table_schema = 'public'
      AND (c.column_name = 'organization_id'
           OR (c.column_name = 'emisor_id'
               AND c.table_name IN ('series', 'invoices', 'tickets', 'global_periods', 'csds')))
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY organization ON %I TO timbra_app '
                   'USING (%I::text = (SELECT timbra_organization())::text) '
                   'WITH CHECK (%I = (SELECT timbra_organization()))', t, col, col);
  END LOOP;
END $$;
-- The organization's own row.
ALTER TABLE emisores ENABLE ROW LEVEL SECURITY;
CREATE POLICY organization ON emisores TO timbra_app
  USING (id::text = (SELECT timbra_organization())::text) WITH CHECK (id = (SELECT timbra_organization()));
