-- Stripe Connect (platform mode): an organization's Stripe account may be a connected account of
-- the platform's (acct_…) instead of an account with secrets of its own. Its events come to the
-- platform's one Connect endpoint (/webhooks/stripe/connect), each naming its account: this column
-- is how the API finds the organization, so an account names at most one organization.
ALTER TABLE provider_accounts ADD COLUMN connected_account text;
ALTER TABLE provider_accounts
  ADD CONSTRAINT provider_accounts_connected_account_check CHECK (connected_account ~ '^acct_[A-Za-z0-9]{1,64}$');
CREATE UNIQUE INDEX provider_accounts_connected_account_key ON provider_accounts (connected_account);
