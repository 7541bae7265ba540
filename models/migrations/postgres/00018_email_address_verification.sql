-- A support address is the workspace's once verified: the suite mails it a
-- token, and the message comes back through the forwarding to the
-- workspace's own address. Only one workspace holds a verified address;
-- others' unverified claims of it stay unverified. Addresses added before
-- verification existed were accepted as the workspace's, and unique: they
-- count as verified.

-- +goose Up
ALTER TABLE email_addresses DROP CONSTRAINT email_addresses_address_key;
ALTER TABLE email_addresses ADD COLUMN token text;
ALTER TABLE email_addresses ADD COLUMN verified_at timestamptz;
UPDATE email_addresses SET token = 'verify-' || replace(id::text, '-', ''), verified_at = created_at;
ALTER TABLE email_addresses ALTER COLUMN token SET NOT NULL;
ALTER TABLE email_addresses ADD CONSTRAINT email_addresses_token_key UNIQUE (token);
ALTER TABLE email_addresses ADD CONSTRAINT email_addresses_org_address_key UNIQUE (org_id, address);
CREATE UNIQUE INDEX email_addresses_verified ON email_addresses (address) WHERE verified_at IS NOT NULL;
