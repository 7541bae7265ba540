-- The staff console (/ops/): billing staff's browser sessions, and the
-- audit log of every staff action (console, operator API and shell).

-- +goose Up
-- A signed-in browser. id is the SHA-256 of the cookie's secret, so the
-- table alone opens no session; csrf_token is the session's form token.
CREATE TABLE staff_sessions (
    id           text        PRIMARY KEY,
    user_id      uuid        NOT NULL REFERENCES identity_users (id) ON DELETE CASCADE,
    email        text        NOT NULL,
    csrf_token   text        NOT NULL,
    client_ip    text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz
);
CREATE INDEX staff_sessions_user ON staff_sessions (user_id);

-- Who did what, when, through which channel, and how it ended. Rows are
-- never updated; actor_id is empty for a refused sign-in of an unknown
-- account and for the shell.
CREATE TABLE staff_audit_log (
    id         uuid        PRIMARY KEY,
    actor_id   text        NOT NULL DEFAULT '',
    actor      text        NOT NULL,
    channel    text        NOT NULL CHECK (channel IN ('console', 'api', 'shell')),
    action     text        NOT NULL,
    target     text        NOT NULL DEFAULT '',
    org_id     text        NOT NULL DEFAULT '',
    outcome    text        NOT NULL,
    detail     text        NOT NULL DEFAULT '',
    client_ip  text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE INDEX staff_audit_log_created ON staff_audit_log (created_at, id);

-- +goose Down
DROP TABLE staff_audit_log;
DROP TABLE staff_sessions;
