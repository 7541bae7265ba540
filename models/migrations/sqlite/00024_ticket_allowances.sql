-- A limited plan's monthly ticket allowance is counted on rows of its own,
-- split over stripes (PostgreSQL's 00024 says why). SQLite's writers take
-- turns anyway; it uses the same rows so that both dialects run one code.

-- +goose Up
CREATE TABLE ticket_allowances (
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    stripe     integer     NOT NULL,
    month      text        NOT NULL,
    used       integer     NOT NULL,
    sized_for  integer     NOT NULL,
    updated_at datetime    NOT NULL,
    PRIMARY KEY (org_id, stripe)
);
INSERT INTO ticket_allowances (org_id, stripe, month, used, sized_for, updated_at)
    SELECT org_id, 0, month, month_count, 0, updated_at FROM ticket_counters WHERE month <> '';

-- +goose Down
UPDATE ticket_counters SET
    month = (SELECT max(month) FROM ticket_allowances a WHERE a.org_id = ticket_counters.org_id),
    month_count = (SELECT sum(used) FROM ticket_allowances a WHERE a.org_id = ticket_counters.org_id
                   AND a.month = (SELECT max(month) FROM ticket_allowances m WHERE m.org_id = ticket_counters.org_id))
    WHERE org_id IN (SELECT org_id FROM ticket_allowances);
DROP TABLE ticket_allowances;
