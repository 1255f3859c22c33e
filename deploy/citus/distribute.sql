-- Distributes Timbra's tables by organization on a Citus cluster (docs/organizations.md, "Scaling
-- out"). Run it once, as the owner, on the coordinator, after `npm run db:migrate` and with the apps
-- stopped: psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f deploy/citus/distribute.sql
--
-- Every table is named here once: a reference table (copied to every node: what routes a request
-- before its organization is known, and the status catalogue) or a table distributed by
-- organization_id, parents before children. packages/db/test/distribution.test.ts reads this file
-- and checks it against the migrated schema: each table named, each distributed table's keys and
-- foreign keys holding organization_id, no reference table pointing at a distributed one.
-- _prisma_migrations stays on the coordinator.

BEGIN;

SELECT create_reference_table('emisores');
SELECT create_reference_table('api_clients');
SELECT create_reference_table('provider_accounts');
SELECT create_reference_table('invoice_status_transitions');

-- invoices and installments point at each other (an installment's Pago, an invoice's installments):
-- the one foreign key that closes the circle waits until both are distributed.
ALTER TABLE invoices DROP CONSTRAINT invoices_installment_id_fkey;

SELECT create_distributed_table('series', 'organization_id');
SELECT create_distributed_table('csds', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('global_periods', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('customers', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('products', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('webhook_endpoints', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('webhook_events', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('idempotency_keys', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('payments', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('refunds', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('invoices', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('installments', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('cancel_requests', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('outbox', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('outbox_redrives', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('pac_attempts', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('invoice_versions', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('invoice_corrections', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('events', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('deliveries', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('delivery_attempts', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('tickets', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('sat_reconciliations', 'organization_id', colocate_with => 'series');
SELECT create_distributed_table('efirmas', 'organization_id', colocate_with => 'series');

ALTER TABLE invoices ADD CONSTRAINT invoices_installment_id_fkey
  FOREIGN KEY (installment_id, organization_id) REFERENCES installments (id, organization_id) ON DELETE RESTRICT;

COMMIT;
