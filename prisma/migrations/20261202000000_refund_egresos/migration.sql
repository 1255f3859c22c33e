-- Refunds become Egresos: each refund has exactly one invoice of kind E (its own serie and gapless
-- folio), linked by invoices.refund_id; the payment's FormaPago is kept for it.

ALTER TABLE "payments" ADD COLUMN "forma_pago" TEXT;
ALTER TABLE "invoices" ADD COLUMN "refund_id" UUID;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_refund_id_fkey" FOREIGN KEY ("refund_id") REFERENCES "refunds"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE UNIQUE INDEX "invoices_refund_id_key" ON "invoices"("refund_id");
