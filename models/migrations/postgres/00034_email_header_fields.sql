-- The e-mail channel maps a header of a message that opens a ticket to a
-- custom field of tickets (issue 47): a JSON object of header names
-- (canonical form) to field keys.

-- +goose Up
ALTER TABLE email_channels ADD COLUMN header_fields text NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE email_channels DROP COLUMN header_fields;
