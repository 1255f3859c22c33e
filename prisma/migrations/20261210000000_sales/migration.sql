-- Real sales (issue #17): line items, products, customers and currencies.
--
-- 1. Products: what a merchant sells, with its SAT keys and tax profile, named in a sale's lines by
--    id or by the merchant's own reference (Stripe metadata `timbra_product`, a Mercado Pago item's
--    id). Checked against the catalogues by the API before they are written.
CREATE TABLE "products" (
  "id" UUID NOT NULL,
  "reference" TEXT NOT NULL,
  "descripcion" TEXT NOT NULL,
  "clave_prod_serv" TEXT NOT NULL,
  "clave_unidad" TEXT NOT NULL,
  "unidad" TEXT,
  -- { iva: '0.160000' | '0.080000' | '0.000000' | 'exento' | 'default', ieps?, retencionIsr?, retencionIva? }
  "taxes" JSONB NOT NULL,
  "unit_price" DECIMAL(24,6),
  "price_includes_tax" BOOLEAN NOT NULL DEFAULT true,
  "active" BOOLEAN NOT NULL DEFAULT true,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "products_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "products_unit_price_check" CHECK ("unit_price" IS NULL OR "unit_price" > 0),
  CONSTRAINT "products_clave_prod_serv_check" CHECK ("clave_prod_serv" ~ '^[0-9]{8}$')
);
CREATE UNIQUE INDEX "products_reference_key" ON "products"("reference");

-- 2. Customers: the receptor's fiscal data entered once (RFC with its check digit, name as registered,
--    postal code, régimen, default UsoCFDI), found by id or by the provider's own customer id. A
--    payment copies what it needs when it is recorded: changing a customer never touches a frozen
--    document (a correction does that).
CREATE TABLE "customers" (
  "id" UUID NOT NULL,
  "rfc" TEXT NOT NULL,
  "nombre" TEXT NOT NULL,
  "codigo_postal" TEXT NOT NULL,
  "regimen_fiscal" TEXT NOT NULL,
  "uso_cfdi" TEXT NOT NULL,
  "email" TEXT,
  "stripe_customer_id" TEXT,
  "mercadopago_payer_id" TEXT,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "customers_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "customers_stripe_customer_id_key" ON "customers"("stripe_customer_id");
CREATE UNIQUE INDEX "customers_mercadopago_payer_id_key" ON "customers"("mercadopago_payer_id");
CREATE INDEX "customers_rfc_idx" ON "customers"("rfc");

-- 3. A payment keeps the lines it was sold with (resolved: products' keys and taxes as they were),
--    the customer it named, and its TipoCambio with where it came from.
ALTER TABLE "payments" ADD COLUMN "lines" JSONB;
ALTER TABLE "payments" ADD COLUMN "customer_id" UUID;
ALTER TABLE "payments" ADD COLUMN "tipo_cambio" DECIMAL(18,6);
ALTER TABLE "payments" ADD COLUMN "tipo_cambio_source" TEXT;
ALTER TABLE "payments" ADD CONSTRAINT "payments_customer_id_fkey" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "payments" ADD CONSTRAINT "payments_tipo_cambio_check" CHECK ("tipo_cambio" IS NULL OR "tipo_cambio" > 0);
ALTER TABLE "payments" ADD CONSTRAINT "payments_tipo_cambio_source_check" CHECK (("tipo_cambio" IS NULL) = ("tipo_cambio_source" IS NULL));
CREATE INDEX "payments_customer_id_idx" ON "payments"("customer_id");

-- 4. A refund may name the lines of its payment it gives money back for.
ALTER TABLE "refunds" ADD COLUMN "lines" JSONB;
