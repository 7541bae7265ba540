-- Outbound webhooks: an organization's endpoints, the events recorded in
-- the transaction of the change they describe, and one delivery of an
-- event to an endpoint, in the endpoint's order (seq).

-- +goose Up
CREATE TABLE webhook_endpoints (
    id                    uuid        PRIMARY KEY,
    org_id                uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    url                   text        NOT NULL,
    description           text        NOT NULL DEFAULT '',
    events                text        NOT NULL,
    secret                text        NOT NULL,
    previous_secret       text        NOT NULL DEFAULT '',
    previous_secret_until timestamptz,
    status                text        NOT NULL CHECK (status IN ('enabled', 'disabled')),
    disabled_reason       text        NOT NULL DEFAULT '',
    -- Who disabled it: 'api' (its admins: it receives nothing new) or
    -- 'delivery' (410 Gone, or days of failures: new events queue, for
    -- when it is enabled again).
    disabled_by           text        NOT NULL DEFAULT '',
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at, id);

CREATE TABLE webhook_events (
    id         uuid        PRIMARY KEY,
    org_id     uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    type       text        NOT NULL,
    payload    text        NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE webhook_deliveries (
    seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid        NOT NULL UNIQUE,
    org_id          uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    endpoint_id     uuid        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        uuid        NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    status          text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    last_status     integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    last_duration_ms integer    NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (endpoint_id, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
