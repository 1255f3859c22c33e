-- Money is a finite decimal (DESIGN.md invariant 10). Postgres' numeric also holds 'NaN' and
-- 'Infinity', and both pass `amount > 0` (NaN sorts above every number), so a NaN refund could be
-- stored and make every later comparison lie. These checks refuse them whatever writes the row. A
-- database already holding such a value fails this migration, naming the constraint: repair the row
-- by hand first.
ALTER TABLE "payments" ADD CONSTRAINT "payments_amount_finite" CHECK ("amount" NOT IN ('NaN', 'Infinity'));
ALTER TABLE "refunds" ADD CONSTRAINT "refunds_amount_finite" CHECK ("amount" NOT IN ('NaN', 'Infinity'));
ALTER TABLE "installments" ADD CONSTRAINT "installments_amount_finite" CHECK ("amount" NOT IN ('NaN', 'Infinity'));
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_totals_finite"
    CHECK ("sub_total" NOT IN ('NaN', 'Infinity', '-Infinity') AND "total" NOT IN ('NaN', 'Infinity', '-Infinity'));
