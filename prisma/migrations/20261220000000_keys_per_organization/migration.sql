-- The keys a merchant or a provider chooses are unique within an organization, not across the
-- deployment (issue #46): two organizations may each have a payment "T-1", a product "SKU-1", an API
-- key named "pos", the same Stripe customer or event. Each unique index gains the organization column,
-- last: lookups by the key itself still use it, and the policies' filter adds the organization (the
-- column is also a distributed table's distribution column, which its unique indexes must hold).
-- What stays unique across the deployment is what identifies a thing from outside any organization:
-- an API key's hash (a request names no organization before it is authenticated), a ticket's download
-- token (the /facturar page), the SAT's UUIDs, and the stamp keys (derived from the emisor's RFC).

DROP INDEX webhook_events_provider_event_id_key;
CREATE UNIQUE INDEX webhook_events_provider_event_id_key ON webhook_events (provider, event_id, organization_id);

DROP INDEX payments_provider_external_id_key;
CREATE UNIQUE INDEX payments_provider_external_id_key ON payments (provider, external_id, organization_id);

DROP INDEX refunds_provider_external_id_key;
CREATE UNIQUE INDEX refunds_provider_external_id_key ON refunds (provider, external_id, organization_id);

DROP INDEX installments_provider_external_id_key;
CREATE UNIQUE INDEX installments_provider_external_id_key ON installments (provider, external_id, organization_id);

DROP INDEX products_reference_key;
CREATE UNIQUE INDEX products_reference_key ON products (reference, organization_id);

DROP INDEX customers_stripe_customer_id_key;
CREATE UNIQUE INDEX customers_stripe_customer_id_key ON customers (stripe_customer_id, organization_id);
DROP INDEX customers_mercadopago_payer_id_key;
CREATE UNIQUE INDEX customers_mercadopago_payer_id_key ON customers (mercadopago_payer_id, organization_id);

DROP INDEX api_clients_name_key;
CREATE UNIQUE INDEX api_clients_name_key ON api_clients (name, organization_id);
