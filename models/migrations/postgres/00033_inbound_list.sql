-- Agents list the workspace's inbound messages by status (issue 45):
-- GET /helpdesk/inbound/email?status=rejected, newest first. A message's
-- subject is kept beside it when it is stored (the list shows it without
-- reading the raw message).

-- +goose Up
ALTER TABLE inbound_emails ADD COLUMN subject text NOT NULL DEFAULT '';
CREATE INDEX inbound_emails_org_status_received ON inbound_emails (org_id, status, received_at, id);

-- +goose Down
DROP INDEX inbound_emails_org_status_received;
ALTER TABLE inbound_emails DROP COLUMN subject;
