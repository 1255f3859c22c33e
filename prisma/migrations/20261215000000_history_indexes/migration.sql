-- History: what the hot paths and the retention rules read stays small as the tables grow
-- (packages/db/src/retention.ts; `npm run bench:history` measures it with millions of rows).
--
-- Outbox rows not done (pending, enqueued, held, failed) by invoice: a PAC call's write-ahead check,
-- a correction's hold and the retention rule for PAC attempts ask "has this invoice an open row?",
-- and the gauges count open rows by status, without reading the done ones.
CREATE INDEX "outbox_open_idx" ON "outbox" ("invoice_id") WHERE "status" <> 'done';
-- The sweeper's stale enqueued rows, oldest first.
CREATE INDEX "outbox_enqueued_idx" ON "outbox" ("enqueued_at") WHERE "status" = 'enqueued';
-- Retention (ages by the database's clock, from columns it wrote): done rows, PAC calls and provider
-- events by age.
CREATE INDEX "outbox_done_idx" ON "outbox" ("created_at") WHERE "status" = 'done';
CREATE INDEX "pac_attempts_created_idx" ON "pac_attempts" ("created_at");
CREATE INDEX "webhook_events_received_idx" ON "webhook_events" ("received_at");
