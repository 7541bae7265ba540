-- A contact's phone number in E.164 (issue 47): duplicates are found by
-- it, through the index. Written with the phone on every write of a
-- contact (Contact's BeforeSave); version 36, a Go migration, fills it
-- for the contacts that exist.

-- +goose Up
ALTER TABLE contacts ADD COLUMN phone_e164 text NOT NULL DEFAULT '';
CREATE INDEX contacts_org_phone ON contacts (org_id, phone_e164) WHERE phone_e164 <> '';

-- +goose Down
DROP INDEX contacts_org_phone;
ALTER TABLE contacts DROP COLUMN phone_e164;
