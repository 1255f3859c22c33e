-- The documents a payment writes are compressed with lz4 instead of pglz (Postgres's default): the
-- frozen XML at the ingest, the stamped XML and the TFD at the stamp, the provider's event, the
-- request a document is built from. pglz's compression was ~4% of Postgres's CPU a stamped payment
-- (perf, saturated; issue #49); lz4 compresses several times faster for a few percent more bytes.
-- It applies to values written from now on; those written before stay readable as they are.
-- Postgres must be built with lz4 (--with-lz4: Debian's, the PGDG packages, the official images
-- and the managed services are).
ALTER TABLE invoices
  ALTER COLUMN frozen_xml SET COMPRESSION lz4,
  ALTER COLUMN stamped_xml SET COMPRESSION lz4,
  ALTER COLUMN tfd_xml SET COMPRESSION lz4,
  ALTER COLUMN cadena_original SET COMPRESSION lz4,
  ALTER COLUMN request SET COMPRESSION lz4;
ALTER TABLE invoice_versions
  ALTER COLUMN frozen_xml SET COMPRESSION lz4,
  ALTER COLUMN cadena_original SET COMPRESSION lz4;
ALTER TABLE webhook_events ALTER COLUMN payload SET COMPRESSION lz4;
ALTER TABLE cancel_requests ALTER COLUMN acuse SET COMPRESSION lz4;
