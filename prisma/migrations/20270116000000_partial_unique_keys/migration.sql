-- A unique index never conflicts on NULL, so a NULL entry in one only costs: a write that leaves
-- the column NULL still enters it, and every non-HOT update enters it again. Most rows leave these
-- columns NULL (an Ingreso has no refund, installment or replaced invoice, and no uuid until it is
-- stamped; a stamp's outbox row has no cancel request), so each unique key over a nullable column
-- now indexes only the rows that have one. Uniqueness and lookups by value are unchanged (a lookup
-- `col = $1` implies `col IS NOT NULL`); a conflict target naming one of them names its predicate
-- too (cancel_requests' in invoices/cancellations.ts). packages/db/test/distribution.test.ts keeps
-- every such key partial. Each is built beside the old one, which is then dropped, and takes its name.
DO $$
DECLARE
  k record;
BEGIN
  FOR k IN
    SELECT * FROM (VALUES
      ('invoices', 'invoices_uuid_key', 'uuid', true),
      ('invoices', 'invoices_refund_id_key', 'refund_id', true),
      ('invoices', 'invoices_installment_id_key', 'installment_id', true),
      ('invoices', 'invoices_replaces_invoice_id_key', 'replaces_invoice_id', true),
      ('outbox', 'outbox_cancel_request_id_key', 'cancel_request_id', true),
      ('cancel_requests', 'cancel_requests_duplicate_uuid_key', 'duplicate_uuid', true),
      ('customers', 'customers_stripe_customer_id_key', 'stripe_customer_id', true),
      ('customers', 'customers_mercadopago_payer_id_key', 'mercadopago_payer_id', true),
      ('tickets', 'tickets_download_token_key', 'download_token', true),
      -- Reference tables: keyed without the organization.
      ('emisores', 'emisores_live_id_key', 'live_id', false),
      ('provider_accounts', 'provider_accounts_connected_account_key', 'connected_account', false)
    ) AS keys (tbl, name, col, with_organization)
  LOOP
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (%s) WHERE %I IS NOT NULL',
      k.name || '_partial', k.tbl,
      CASE WHEN k.with_organization THEN format('%I, organization_id', k.col) ELSE format('%I', k.col) END,
      k.col);
    EXECUTE format('DROP INDEX %I', k.name);
    EXECUTE format('ALTER INDEX %I RENAME TO %I', k.name || '_partial', k.name);
  END LOOP;
END
$$;
