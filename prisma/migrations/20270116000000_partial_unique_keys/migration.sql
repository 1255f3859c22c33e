-- A unique index never conflicts on NULL, so a NULL entry in one only costs: a write that leaves
-- the column NULL still enters it, and every non-HOT update enters it again. Most rows leave these
-- columns NULL (an Ingreso has no refund, installment or replaced invoice, and no uuid until it is
-- stamped; a stamp's outbox row has no cancel request), so each unique key over a nullable column
-- now indexes only the rows that have one. Uniqueness and lookups by value are unchanged (a lookup
-- `col = $1` implies `col IS NOT NULL`); a conflict target naming one of them names its predicate
-- too (cancel_requests' in invoices/cancellations.ts). packages/db/test/distribution.test.ts keeps
-- every such key partial.
CREATE UNIQUE INDEX invoices_uuid_key_partial ON invoices (uuid, organization_id) WHERE uuid IS NOT NULL;
DROP INDEX invoices_uuid_key;
ALTER INDEX invoices_uuid_key_partial RENAME TO invoices_uuid_key;

CREATE UNIQUE INDEX invoices_refund_id_key_partial ON invoices (refund_id, organization_id) WHERE refund_id IS NOT NULL;
DROP INDEX invoices_refund_id_key;
ALTER INDEX invoices_refund_id_key_partial RENAME TO invoices_refund_id_key;

CREATE UNIQUE INDEX invoices_installment_id_key_partial ON invoices (installment_id, organization_id) WHERE installment_id IS NOT NULL;
DROP INDEX invoices_installment_id_key;
ALTER INDEX invoices_installment_id_key_partial RENAME TO invoices_installment_id_key;

CREATE UNIQUE INDEX invoices_replaces_invoice_id_key_partial ON invoices (replaces_invoice_id, organization_id) WHERE replaces_invoice_id IS NOT NULL;
DROP INDEX invoices_replaces_invoice_id_key;
ALTER INDEX invoices_replaces_invoice_id_key_partial RENAME TO invoices_replaces_invoice_id_key;

CREATE UNIQUE INDEX outbox_cancel_request_id_key_partial ON outbox (cancel_request_id, organization_id) WHERE cancel_request_id IS NOT NULL;
DROP INDEX outbox_cancel_request_id_key;
ALTER INDEX outbox_cancel_request_id_key_partial RENAME TO outbox_cancel_request_id_key;

CREATE UNIQUE INDEX cancel_requests_duplicate_uuid_key_partial ON cancel_requests (duplicate_uuid, organization_id) WHERE duplicate_uuid IS NOT NULL;
DROP INDEX cancel_requests_duplicate_uuid_key;
ALTER INDEX cancel_requests_duplicate_uuid_key_partial RENAME TO cancel_requests_duplicate_uuid_key;

CREATE UNIQUE INDEX customers_stripe_customer_id_key_partial ON customers (stripe_customer_id, organization_id) WHERE stripe_customer_id IS NOT NULL;
DROP INDEX customers_stripe_customer_id_key;
ALTER INDEX customers_stripe_customer_id_key_partial RENAME TO customers_stripe_customer_id_key;

CREATE UNIQUE INDEX customers_mercadopago_payer_id_key_partial ON customers (mercadopago_payer_id, organization_id) WHERE mercadopago_payer_id IS NOT NULL;
DROP INDEX customers_mercadopago_payer_id_key;
ALTER INDEX customers_mercadopago_payer_id_key_partial RENAME TO customers_mercadopago_payer_id_key;

CREATE UNIQUE INDEX tickets_download_token_key_partial ON tickets (download_token, organization_id) WHERE download_token IS NOT NULL;
DROP INDEX tickets_download_token_key;
ALTER INDEX tickets_download_token_key_partial RENAME TO tickets_download_token_key;

CREATE UNIQUE INDEX emisores_live_id_key_partial ON emisores (live_id) WHERE live_id IS NOT NULL;
DROP INDEX emisores_live_id_key;
ALTER INDEX emisores_live_id_key_partial RENAME TO emisores_live_id_key;

CREATE UNIQUE INDEX provider_accounts_connected_account_key_partial ON provider_accounts (connected_account) WHERE connected_account IS NOT NULL;
DROP INDEX provider_accounts_connected_account_key;
ALTER INDEX provider_accounts_connected_account_key_partial RENAME TO provider_accounts_connected_account_key;
