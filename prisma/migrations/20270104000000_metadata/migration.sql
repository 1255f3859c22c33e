-- Metadata: the merchant's own string map on payments, invoices and customers (docs/api.md,
-- "Metadata"). Never part of a CFDI. The limits (50 keys, keys of 40 characters, values of 500) are
-- checked by the API (packages/db/src/metadata.ts owns them); the database holds the shape: an
-- object of strings. Lists filter by containment (`metadata @> '{"k":"v"}'`): the partial GIN indexes
-- cover only rows that have metadata, so a row written without any costs no index entry.
CREATE FUNCTION timbra_is_metadata(m jsonb) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN jsonb_typeof(m) = 'object'
    AND NOT jsonb_path_exists(m, '$.* ? (@.type() != "string")');

ALTER TABLE payments ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
  CONSTRAINT payments_metadata_check CHECK (timbra_is_metadata(metadata));
ALTER TABLE invoices ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
  CONSTRAINT invoices_metadata_check CHECK (timbra_is_metadata(metadata));
ALTER TABLE customers ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
  CONSTRAINT customers_metadata_check CHECK (timbra_is_metadata(metadata));

CREATE INDEX payments_metadata_idx ON payments USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}';
CREATE INDEX invoices_metadata_idx ON invoices USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}';
CREATE INDEX customers_metadata_idx ON customers USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}';

-- Events carry their object's metadata as it was when the event happened (Stripe's events do too).
CREATE OR REPLACE FUNCTION timbra_invoice_object(i invoices) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', i.id, 'kind', i.kind, 'serie', i.serie, 'folio', i.folio, 'status', i.status,
    'uuid', i.uuid, 'total', i.total::text, 'currency', i.moneda, 'paymentId', i.payment_id,
    'relatedInvoiceId', i.related_invoice_id, 'version', i.version, 'problems', i.problems,
    'metadata', i.metadata)
$$;

CREATE OR REPLACE FUNCTION payments_record_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM timbra_record_events(array_agg('payment.recorded'::text), array_agg(NULL::uuid), array_agg(n.id), array_agg(NULL::uuid),
    array_agg(jsonb_build_object(
      'id', n.id, 'provider', n.provider, 'externalId', n.external_id, 'amount', n.amount::text,
      'currency', n.currency, 'occurredAt', n.occurred_at, 'paymentTerms', n.payment_terms,
      'customerId', n.customer_id, 'metadata', n.metadata)))
  FROM inserted n
  HAVING count(*) > 0;
  RETURN NULL;
END $$;
