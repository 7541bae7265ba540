-- A support address is the workspace's once verified: the suite mails it a
-- token, and the message comes back through the forwarding to the
-- workspace's own address. Only one workspace holds a verified address;
-- others' unverified claims of it stay unverified. Addresses added before
-- verification existed were accepted as the workspace's, and unique: they
-- count as verified. SQLite cannot drop a column constraint (address
-- UNIQUE): the table is rebuilt.

-- +goose Up
CREATE TABLE email_addresses_new (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    address     text        NOT NULL,
    token       text        NOT NULL UNIQUE,
    verified_at datetime,
    created_at  datetime    NOT NULL,
    UNIQUE (org_id, address)
);
INSERT INTO email_addresses_new (id, org_id, address, token, verified_at, created_at)
SELECT id, org_id, address, 'verify-' || replace(id, '-', ''), created_at, created_at FROM email_addresses;
DROP TABLE email_addresses;
ALTER TABLE email_addresses_new RENAME TO email_addresses;
CREATE INDEX email_addresses_org ON email_addresses (org_id, created_at, id);
CREATE UNIQUE INDEX email_addresses_verified ON email_addresses (address) WHERE verified_at IS NOT NULL;
