-- The outbox keeps the id of the request that recorded a workflow start or
-- signal: the relay passes it on in the workflow's headers, and the
-- workflow's and its activities' log lines carry it.

-- +goose Up
ALTER TABLE workflow_starts ADD COLUMN request_id text NOT NULL DEFAULT '';
