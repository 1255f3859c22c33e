-- Whether documents (Egresos, Pagos) wait for an invoice, seen as of now: the stamp's statement asks
-- it after its UPDATE has the invoice's row lock (issue #49).
--
-- A dependent is written under a share lock of its invoice (lockInvoiceShared); a stamp's UPDATE of
-- that invoice waits for the lock, so the dependent commits after the stamp's statement began and
-- its snapshot does not show it. The stamper used to ask again in a statement of its own (a fresh
-- look: a round trip and a commit a stamped payment). A VOLATILE PL/pgSQL function takes a fresh
-- snapshot for each query it runs (READ COMMITTED), so asked once the UPDATE holds the lock it sees
-- every dependent whose transaction held the lock before; one that comes later waits for the stamp's
-- commit and then reads the invoice stamped, and freezes itself.
CREATE FUNCTION timbra_dependents_waiting(invoice uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN EXISTS (SELECT 1 FROM invoices w WHERE w.related_invoice_id = invoice AND w.status = 'waiting');
END
$$;
