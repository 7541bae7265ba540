-- A limited plan's monthly ticket allowance is counted on the workspace's
-- counter row again, as before 00024 (PostgreSQL's 00025 says why: no
-- limited plan allows enough tickets a month for the stripes' speed to be
-- felt).

-- +goose Up
-- Each workspace's latest month counted on the stripes moves to its
-- counter row: the month and what its stripes used.
INSERT INTO ticket_counters (org_id, last_number, month, month_count, updated_at)
    SELECT a.org_id, COALESCE((SELECT max(number) FROM tickets t WHERE t.org_id = a.org_id), 1000),
           a.month, sum(a.used), max(a.updated_at)
    FROM ticket_allowances a
    WHERE a.month <> '' AND a.month = (SELECT max(month) FROM ticket_allowances m WHERE m.org_id = a.org_id)
    GROUP BY a.org_id, a.month
    ON CONFLICT (org_id) DO UPDATE SET month = excluded.month, month_count = excluded.month_count;
-- The table stays, unused, so that a process of the release before this
-- one, still running while this one rolls out, keeps opening tickets (a
-- migration here is additive: deploy/README.md); what it counts there
-- meanwhile is not seen on the counter row. A later migration drops it.

-- +goose Down
-- Back to the stripes, as 00024's Up made them: the month counted on the
-- counter row moves to stripe 0, sized for no allowance, and the first
-- creation after shares it out.
DELETE FROM ticket_allowances;
INSERT INTO ticket_allowances (org_id, stripe, month, used, sized_for, updated_at)
    SELECT org_id, 0, month, month_count, 0, updated_at FROM ticket_counters WHERE month <> '';
