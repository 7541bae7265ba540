-- A limited plan's monthly ticket allowance is counted on rows of its own,
-- split over stripes (models.takeMonthlyTicket): a creation locks the one
-- stripe it counts on, until its commit, so creations in one workspace run
-- side by side, where the one counter row (ticket_counters.month_count)
-- made each wait for the commit of the one before it (230–244 creations
-- a second at 16 connections on the business plan in `make bench`,
-- 564–629 with the stripes). Stripe i holds at most its share of the plan's
-- allowance (sized_for, the allowance the shares were cut from), so the
-- month can never take more than the allowance; a stripe of an earlier
-- month counts as empty.

-- +goose Up
CREATE TABLE ticket_allowances (
    org_id     uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    stripe     integer     NOT NULL,
    month      text        NOT NULL,
    used       integer     NOT NULL,
    sized_for  integer     NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, stripe)
);
-- The month counted so far moves to stripe 0, sized for no allowance: the
-- first creation after the upgrade shares it out over the stripes.
INSERT INTO ticket_allowances (org_id, stripe, month, used, sized_for, updated_at)
    SELECT org_id, 0, month, month_count, 0, updated_at FROM ticket_counters WHERE month <> '';

-- +goose Down
-- Back to the counter row: it takes the month's count of every stripe.
UPDATE ticket_counters c SET month = a.month, month_count = a.used
    FROM (SELECT DISTINCT ON (org_id) org_id, month, sum(used) OVER (PARTITION BY org_id, month) AS used
          FROM ticket_allowances ORDER BY org_id, month DESC) a
    WHERE c.org_id = a.org_id;
DROP TABLE ticket_allowances;
