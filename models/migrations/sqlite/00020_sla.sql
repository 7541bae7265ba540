-- Ticket SLAs: a workspace's policy, one row per version (a ticket keeps
-- the version it was opened under), and each ticket's clocks, on the
-- ticket itself: its state (JSON) and the columns the lists filter on.

-- +goose Up
CREATE TABLE sla_policies (
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    version    integer     NOT NULL,
    policy     text        NOT NULL,
    created_by text        NOT NULL DEFAULT '',
    created_at datetime    NOT NULL,
    PRIMARY KEY (org_id, version)
);

ALTER TABLE tickets ADD COLUMN sla_state text;
ALTER TABLE tickets ADD COLUMN sla_breached boolean NOT NULL DEFAULT 0;
-- The earliest due time, and the earliest warning, of the running clocks.
ALTER TABLE tickets ADD COLUMN sla_next_due_at datetime;
ALTER TABLE tickets ADD COLUMN sla_next_warn_at datetime;
CREATE INDEX tickets_sla_breached ON tickets (org_id, created_at, id) WHERE sla_breached;
CREATE INDEX tickets_sla_at_risk ON tickets (org_id, sla_next_warn_at) WHERE sla_next_warn_at IS NOT NULL;

