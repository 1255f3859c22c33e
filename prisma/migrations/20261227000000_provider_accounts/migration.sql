-- Platform mode: each organization's own Stripe and Mercado Pago accounts. Their webhooks come to a
-- path of the organization's (/webhooks/stripe/<organization id>), signed with its secret; its API
-- key (Stripe) or access token (Mercado Pago) reads the provider's objects. The secrets are sealed
-- by VAULT_KEYS (cfdi-node's SealedSecret of {webhookSecret, apiKey}, bound to
-- `provider:<organization>:<provider>`), never stored in the clear. The home organization keeps its STRIPE_* and MERCADOPAGO_* settings.
CREATE TABLE provider_accounts (
  organization_id uuid NOT NULL DEFAULT timbra_organization_or_sole(),
  provider        text NOT NULL CHECK (provider IN ('stripe', 'mercadopago')),
  sealed          jsonb NOT NULL,
  created_at      timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated_at      timestamptz(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT provider_accounts_pkey PRIMARY KEY (organization_id, provider)
);
ALTER TABLE provider_accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY organization ON provider_accounts TO timbra_app
  USING (organization_id::text = (SELECT timbra_organization())::text)
  WITH CHECK (organization_id = (SELECT timbra_organization()));
GRANT SELECT, INSERT, UPDATE, DELETE ON provider_accounts TO timbra_app;
