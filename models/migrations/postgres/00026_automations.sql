-- Automations (issue 46): an organization's rules (an event, conditions,
-- steps) and their runs, one row per run, each carried out by its
-- AutomationRun workflow. A rule's definition is versioned in place: a
-- run keeps the version it matched (its input holds the definition).

-- +goose Up
CREATE TABLE automations (
    id          uuid        PRIMARY KEY,
    org_id      uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    active      boolean     NOT NULL DEFAULT false,
    position    integer     NOT NULL DEFAULT 0,
    object      text        NOT NULL,
    on_events   text        NOT NULL,
    conditions  text        NOT NULL,
    steps       text        NOT NULL,
    refire      text        NOT NULL CHECK (refire IN ('once', 'every_match')),
    version     integer     NOT NULL DEFAULT 1,
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX automations_org ON automations (org_id, created_at, id);
-- What every change of a workspace with rules reads (record.Tx.Emit).
CREATE INDEX automations_active ON automations (org_id, position) WHERE active;

CREATE TABLE automation_runs (
    id            uuid        PRIMARY KEY,
    org_id        uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    automation_id uuid        NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    version       integer     NOT NULL,
    object        text        NOT NULL,
    object_id     text        NOT NULL,
    event         text        NOT NULL,
    workflow_id   text        NOT NULL,
    status        text        NOT NULL CHECK (status IN ('running', 'waiting', 'completed', 'stopped', 'failed', 'cancelled')),
    -- What a waiting run waits for (a trigger of its object), '' if none.
    waiting_for   text        NOT NULL DEFAULT '',
    depth         integer     NOT NULL DEFAULT 1,
    -- The outcome of each step carried out, as JSON (AutomationStepOutcome).
    steps         text        NOT NULL DEFAULT '[]',
    reason        text        NOT NULL DEFAULT '',
    -- Set for a rule that runs once per object: at most one run each.
    once_key      text,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    finished_at   timestamptz
);
CREATE UNIQUE INDEX automation_runs_once ON automation_runs (once_key) WHERE once_key IS NOT NULL;
CREATE INDEX automation_runs_rule ON automation_runs (automation_id, created_at, id);
-- The runs of an object that are still going: a change signals those
-- waiting for it, and an every_match rule starts its run over.
CREATE INDEX automation_runs_open ON automation_runs (org_id, object_id) WHERE status IN ('running', 'waiting');

-- +goose Down
DROP TABLE automation_runs;
DROP TABLE automations;
