-- The sweeper asks each organization, every minute (SWEEPER_INTERVAL_MS), for its stamped
-- replacements whose original is still stamped (replacementsAwaitingCancellation). Nothing in that
-- question was selective — the organization's policy is a filter, never an index condition — so each
-- organization's sweep read the whole invoices table: 38–43 ms a call on 20,000 invoices, 58–64% of
-- Postgres's time with 1,000 organizations (bench:e2e -- --organizations 1000), and a scan growing
-- with history for one. Replacements are few: an index of the stamped ones makes the question a
-- read of those.
CREATE INDEX "invoices_stamped_replacements_idx" ON "invoices" ("replaces_invoice_id")
  WHERE "status" = 'stamped' AND "replaces_invoice_id" IS NOT NULL;
