-- Invoices that need data wait for a person: the worker's gauges (how many, how old the oldest) read
-- them at every scrape, through this small partial index rather than a scan of every invoice.
CREATE INDEX "invoices_needs_data_idx" ON "invoices" ("created_at") WHERE "status" = 'needs_data';
