-- Foundation: the workflow-start outbox and stored idempotent responses.
-- Migrations are forward-only: a change is a new file, never an edit.

-- +goose Up
CREATE TABLE workflow_starts (
    id              text     PRIMARY KEY,
    workflow_id     text     NOT NULL UNIQUE,
    workflow_type   text     NOT NULL,
    task_queue      text     NOT NULL,
    input           text     NOT NULL DEFAULT '',
    org_id          text     NOT NULL DEFAULT '',
    kind            text     NOT NULL DEFAULT '',
    status          text     NOT NULL,
    attempts        integer  NOT NULL DEFAULT 0,
    next_attempt_at datetime NOT NULL,
    last_error      text     NOT NULL DEFAULT '',
    run_id          text     NOT NULL DEFAULT '',
    started_at      datetime,
    created_at      datetime NOT NULL,
    updated_at      datetime NOT NULL
);
CREATE INDEX workflow_starts_due ON workflow_starts (next_attempt_at) WHERE status = 'pending';
CREATE INDEX workflow_starts_org ON workflow_starts (org_id, created_at);

CREATE TABLE idempotency_keys (
    scope        text     NOT NULL,
    key          text     NOT NULL,
    request_hash text     NOT NULL,
    state        text     NOT NULL,
    status_code  integer  NOT NULL DEFAULT 0,
    content_type text     NOT NULL DEFAULT '',
    location     text     NOT NULL DEFAULT '',
    body         blob,
    created_at   datetime NOT NULL,
    expires_at   datetime NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
