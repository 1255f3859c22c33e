-- Dependent documents: an Egreso (refund) or a Pago needs the UUID of the invoice it relates to, so
-- it waits (status 'waiting', its request kept in "request") until that invoice is stamped, and is
-- frozen then, once.

ALTER TABLE "invoices" DROP CONSTRAINT "invoices_status_check";
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_status_check" CHECK ("status" IN ('waiting', 'needs_data', 'pending', 'stamped', 'stamp_failed', 'cancel_requested', 'cancelled'));
ALTER TABLE "invoices" ADD COLUMN "request" JSONB;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_related_invoice_id_fkey" FOREIGN KEY ("related_invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE INDEX "invoices_waiting_idx" ON "invoices"("related_invoice_id") WHERE status = 'waiting';
