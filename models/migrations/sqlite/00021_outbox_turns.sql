-- The outbox relay takes due rows in turns across organizations and kinds
-- (models.DueStarts): this index hands it each (organization, kind)'s
-- pending rows in order.

-- +goose Up
CREATE INDEX workflow_starts_turns ON workflow_starts (org_id, kind, next_attempt_at, id) WHERE status = 'pending';
