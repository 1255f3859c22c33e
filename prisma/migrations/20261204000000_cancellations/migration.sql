-- Cancellation: a request per attempt to cancel a stamped CFDI (motivo 01–04, the substitute's UUID
-- for 01), carried to the PAC by an outbox row of kind 'cancel', then followed at the SAT until final.
--   requested ─(PAC: 201 / 202)─▶ accepted ─(SAT: Cancelado)─▶ cancelled
--                                         └─(SAT: Solicitud rechazada)─▶ rejected (the invoice is stamped again)
--   requested ─(PAC refuses the request)─▶ failed (the invoice is stamped again)
-- duplicate_uuid: set when the request cancels not the invoice's own CFDI but a duplicate of it (a
-- second UUID the PAC issued for the same document, found by reconciliation): motivo 01, replaced by
-- the invoice's UUID; the invoice itself stays stamped.

CREATE TABLE "cancel_requests" (
    "id" UUID NOT NULL,
    "invoice_id" UUID NOT NULL,
    "motivo" TEXT NOT NULL,
    "folio_sustitucion" TEXT,
    "duplicate_uuid" TEXT,
    "status" TEXT NOT NULL DEFAULT 'requested',
    "pac" TEXT,
    "uuid_code" TEXT,
    "acuse" TEXT,
    "estatus_cancelacion" TEXT,
    "reason" TEXT,
    "polls" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cancel_requests_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "cancel_requests_motivo_check" CHECK ("motivo" IN ('01', '02', '03', '04')),
    CONSTRAINT "cancel_requests_status_check" CHECK ("status" IN ('requested', 'accepted', 'cancelled', 'rejected', 'failed')),
    CONSTRAINT "cancel_requests_sustitucion_check" CHECK (("motivo" = '01') = ("folio_sustitucion" IS NOT NULL))
);
CREATE INDEX "cancel_requests_invoice_id_idx" ON "cancel_requests"("invoice_id");
CREATE UNIQUE INDEX "cancel_requests_duplicate_uuid_key" ON "cancel_requests"("duplicate_uuid");
ALTER TABLE "cancel_requests" ADD CONSTRAINT "cancel_requests_invoice_id_fkey" FOREIGN KEY ("invoice_id") REFERENCES "invoices"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

ALTER TABLE "outbox" ADD COLUMN "cancel_request_id" UUID;
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_cancel_request_id_fkey" FOREIGN KEY ("cancel_request_id") REFERENCES "cancel_requests"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
CREATE UNIQUE INDEX "outbox_cancel_request_id_key" ON "outbox"("cancel_request_id");
