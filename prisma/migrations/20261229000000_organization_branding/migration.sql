-- Platform mode: an organization's own logo on its PDFs (PUT /v1/organizations/:id/logo): a PNG or
-- JPEG of at most 1 MB, checked as INVOICE_LOGO_FILE is (cfdi-node's invoiceLogoProblem). NULL: the
-- deployment's INVOICE_LOGO_FILE. Its email sender is in `settings` (email.from, email.replyTo).
ALTER TABLE emisores ADD COLUMN logo bytea;
