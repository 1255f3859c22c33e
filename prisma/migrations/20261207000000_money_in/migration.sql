-- Money in, correctly (issue #14).
--
-- 1. Amounts stay within the grammar's maximum (cfdi-core MAX_AMOUNT, 999,999,999,999.99) whatever
--    writes them.
ALTER TABLE "payments" ADD CONSTRAINT "payments_amount_max" CHECK ("amount" <= 999999999999.99);
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_amount_max" CHECK ("amount" <= 999999999999.99);
ALTER TABLE "installments" ADD CONSTRAINT "installments_amount_max" CHECK ("amount" <= 999999999999.99);

-- 2. A refund is `succeeded` (it has its Egreso) or `reversed`: the provider reported it failed or
--    canceled after it had succeeded. A reversed refund no longer counts against the payment.
ALTER TABLE "refunds" ADD COLUMN "status" TEXT NOT NULL DEFAULT 'succeeded';
ALTER TABLE "refunds" ADD COLUMN "reversed_at" TIMESTAMPTZ(3);
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_status_check" CHECK ("status" IN ('succeeded', 'reversed'));
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_reversed_check" CHECK (("status" = 'reversed') = ("reversed_at" IS NOT NULL));

-- 3. The refunds of a payment that stand never add up to more than it paid. recordRefund checks
--    first (with the payment's row locked) and answers 422; this trigger makes every other path fail
--    too. Deferred to commit, so it sees the transaction's final rows.
CREATE FUNCTION refunds_within_payment() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  paid numeric;
  refunded numeric;
BEGIN
  SELECT amount INTO paid FROM payments WHERE id = NEW.payment_id;
  SELECT coalesce(sum(amount), 0) INTO refunded FROM refunds
   WHERE payment_id = NEW.payment_id AND status = 'succeeded';
  IF refunded > paid THEN
    RAISE EXCEPTION 'refunds_within_payment: refunds of payment % add up to % of %', NEW.payment_id, refunded, paid
      USING ERRCODE = 'check_violation', CONSTRAINT = 'refunds_within_payment';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER "refunds_within_payment" AFTER INSERT OR UPDATE OF "amount", "status", "payment_id" ON "refunds"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refunds_within_payment();

-- 4. A webhook event that is correctly signed but cannot be recorded (a poison event) is stored with
--    result `failed` and why, instead of being answered 5xx and retried for days.
ALTER TABLE "webhook_events" ADD COLUMN "reason" TEXT;
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_result_check" CHECK ("result" IN ('accepted', 'ignored', 'failed'));
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_reason_check" CHECK (("result" = 'failed') = ("reason" IS NOT NULL));
CREATE INDEX "webhook_events_failed_idx" ON "webhook_events" ("received_at") WHERE "result" = 'failed';
