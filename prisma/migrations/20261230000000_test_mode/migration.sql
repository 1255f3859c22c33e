-- Test and live, as Stripe has them: an organization's test documents live in its test twin, an
-- organization of its own (mode 'test', live_id its live one) with the same facts. Row-level
-- security keeps the twin's rows from the live one's keys as it keeps any two organizations apart;
-- its folios are its own, so a test sale never takes a live folio; the worker stamps its documents
-- only at the test PAC (PAC_TEST_*). An RFC names one live organization, and has at most one twin.
ALTER TABLE emisores
  ADD COLUMN mode text NOT NULL DEFAULT 'live',
  ADD COLUMN live_id uuid;
ALTER TABLE emisores ADD CONSTRAINT emisores_mode_check CHECK (mode IN ('live', 'test'));
ALTER TABLE emisores ADD CONSTRAINT emisores_twin_check CHECK ((mode = 'test') = (live_id IS NOT NULL));
ALTER TABLE emisores
  ADD CONSTRAINT emisores_live_id_fkey FOREIGN KEY (live_id) REFERENCES emisores(id) ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE UNIQUE INDEX emisores_live_id_key ON emisores (live_id);
DROP INDEX emisores_rfc_key;
CREATE UNIQUE INDEX emisores_rfc_key ON emisores (rfc) WHERE mode = 'live';

-- A UUID is the SAT's, unique at the SAT; here unique within an organization's documents: a test
-- PAC (the sandbox seals deterministically) may give a twin's document the UUID the live PAC gives
-- the same sale, and each is its own organization's record.
DROP INDEX invoices_uuid_key;
CREATE UNIQUE INDEX invoices_uuid_key ON invoices (uuid, emisor_id);
