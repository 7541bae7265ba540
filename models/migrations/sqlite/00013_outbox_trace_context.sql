-- The outbox keeps the W3C trace context of the request that recorded a
-- workflow start or signal, so the relay's call to Temporal — and the
-- workflow and activities after it — continue the request's trace.

-- +goose Up
ALTER TABLE workflow_starts ADD COLUMN trace_context text NOT NULL DEFAULT '';
