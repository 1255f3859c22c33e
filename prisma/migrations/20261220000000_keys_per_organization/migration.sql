-- The keys a merchant or a provider chooses are unique within an organization, not across the
-- deployment (issue #46): two organizations may each have a payment "T-1", a product "SKU-1", an API
-- key named "pos", the same Stripe customer or event. Each unique index gains the organization column
-- first, which is also the column the policies compare and a distributed table's distribution column.
-- What stays unique across the deployment is what identifies a thing from outside any organization:
-- an API key's hash (a request names no organization before it is authenticated), a ticket's download
-- token (the /facturar page), the SAT's UUIDs, and the stamp keys (derived from the emisor's RFC).

DROP INDEX webhook_events_provider_event_id_key;
CREATE UNIQUE INDEX webhook_events_provider_event_id_key ON webhook_events (organization_id, provider, event_id);

DROP INDEX payments_provider_external_id_key;
CREATE UNIQUE INDEX payments_provider_external_id_key ON payments (organization_id, provider, external_id);

DROP INDEX refunds_provider_external_id_key;
CREATE UNIQUE INDEX refunds_provider_external_id_key ON refunds (organization_id, provider, external_id);

DROP INDEX installments_provider_external_id_key;
CREATE UNIQUE INDEX installments_provider_external_id_key ON installments (organization_id, provider, external_id);

DROP INDEX products_reference_key;
CREATE UNIQUE INDEX products_reference_key ON products (organization_id, reference);

DROP INDEX customers_stripe_customer_id_key;
CREATE UNIQUE INDEX customers_stripe_customer_id_key ON customers (organization_id, stripe_customer_id);
DROP INDEX customers_mercadopago_payer_id_key;
CREATE UNIQUE INDEX customers_mercadopago_payer_id_key ON customers (organization_id, mercadopago_payer_id);

DROP INDEX api_clients_name_key;
CREATE UNIQUE INDEX api_clients_name_key ON api_clients (organization_id, name);
