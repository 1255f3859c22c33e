-- Installment sales (PPD): a payment's terms, and each amount received later against its Ingreso,
-- numbered per Ingreso (NumParcialidad), with its Pago invoice (complemento de pago 2.0) linked by
-- invoices.installment_id.

ALTER TABLE "payments" ADD COLUMN "payment_terms" TEXT NOT NULL DEFAULT 'single';
ALTER TABLE "payments" ADD CONSTRAINT "payments_payment_terms_check" CHECK ("payment_terms" IN ('single', 'installments'));

CREATE TABLE "installments" (
    "id" UUID NOT NULL,
    "invoice_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "amount" DECIMAL(18,2) NOT NULL,
    "paid_at" TIMESTAMPTZ(3) NOT NULL,
    "forma_pago" TEXT NOT NULL,
    "num_parcialidad" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "installments_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "installments_amount_check" CHECK ("amount" > 0)
);
CREATE UNIQUE INDEX "installments_provider_external_id_key" ON "installments"("provider", "external_id");
CREATE UNIQUE INDEX "installments_invoice_id_num_parcialidad_key" ON "installments"("invoice_id", "num_parcialidad");
ALTER TABLE "installments" ADD CONSTRAINT "installments_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

ALTER TABLE "invoices" ADD COLUMN "installment_id" UUID;
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_installment_id_fkey" FOREIGN KEY ("installment_id") REFERENCES "installments"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE UNIQUE INDEX "invoices_installment_id_key" ON "invoices"("installment_id");
