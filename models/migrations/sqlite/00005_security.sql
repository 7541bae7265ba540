-- Security fixes (issue 9): short idempotency leases, revoked sign-in
-- sessions, push subscriptions per member, anonymous lead intakes,
-- plain-text knowledge-base search, and invitations with secret tokens.

-- +goose Up

-- An in-flight Idempotency-Key is claimed until locked_until; the request
-- renews the claim while it runs.
ALTER TABLE idempotency_keys ADD COLUMN locked_until datetime NOT NULL DEFAULT '1970-01-01 00:00:00+00:00';
UPDATE idempotency_keys SET locked_until = created_at;

-- Sign-ins (refresh-token families) revoked before their access tokens
-- expire; every API process refuses those tokens. Rows are kept until the
-- last access token of the session has expired.
CREATE TABLE identity_revoked_sessions (
    session_id text     PRIMARY KEY,
    revoked_at datetime NOT NULL,
    expires_at datetime NOT NULL
);
CREATE INDEX identity_revoked_sessions_expires ON identity_revoked_sessions (expires_at);

-- A push endpoint may be registered by several members (one browser
-- profile, two accounts); each registration is its own row. SQLite cannot
-- drop the column's UNIQUE constraint, so the table is rebuilt.
CREATE TABLE push_subscriptions_new (
    id         text        PRIMARY KEY,
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id  text        NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    endpoint   text        NOT NULL,
    p256dh     text        NOT NULL,
    auth       text        NOT NULL,
    user_agent text        NOT NULL DEFAULT '',
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL
);
INSERT INTO push_subscriptions_new (id, org_id, member_id, endpoint, p256dh, auth, user_agent, created_at, updated_at)
    SELECT id, org_id, member_id, endpoint, p256dh, auth, user_agent, created_at, updated_at FROM push_subscriptions;
DROP TABLE push_subscriptions;
ALTER TABLE push_subscriptions_new RENAME TO push_subscriptions;
CREATE UNIQUE INDEX push_subscriptions_member_endpoint ON push_subscriptions (member_id, endpoint);

-- Whether the intake came with the organization's crm_ key: only those may
-- change an existing lead.
ALTER TABLE lead_intakes ADD COLUMN authenticated boolean NOT NULL DEFAULT false;

-- Knowledge-base search runs over the article's plain text (Markdown
-- stripped), so snippets carry no Markdown. The FTS5 index moves to
-- body_text; the Go migration that follows fills it for existing articles
-- (its updates reach the index through the update trigger).
DROP TRIGGER kb_articles_fts_insert;
DROP TRIGGER kb_articles_fts_delete;
DROP TRIGGER kb_articles_fts_update;
DROP TABLE kb_articles_fts;
ALTER TABLE kb_articles ADD COLUMN body_text text NOT NULL DEFAULT '';
CREATE VIRTUAL TABLE kb_articles_fts USING fts5(title, body_text, content='kb_articles', content_rowid='rowid', tokenize='porter unicode61');
INSERT INTO kb_articles_fts (kb_articles_fts) VALUES ('rebuild');
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_insert AFTER INSERT ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (rowid, title, body_text) VALUES (new.rowid, new.title, new.body_text);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_delete AFTER DELETE ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (kb_articles_fts, rowid, title, body_text) VALUES ('delete', old.rowid, old.title, old.body_text);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_update AFTER UPDATE OF title, body_text ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (kb_articles_fts, rowid, title, body_text) VALUES ('delete', old.rowid, old.title, old.body_text);
    INSERT INTO kb_articles_fts (rowid, title, body_text) VALUES (new.rowid, new.title, new.body_text);
END;
-- +goose StatementEnd

-- Server-side secrets generated once (e.g. the key invitation tokens are
-- derived from).
CREATE TABLE server_secrets (
    name       text     PRIMARY KEY,
    secret     blob     NOT NULL,
    created_at datetime NOT NULL
);

-- An invitation of a (pending) member: a secret token, stored as its
-- SHA-256, accepted once before it expires.
CREATE TABLE invitations (
    id           text     PRIMARY KEY,
    org_id       text     NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id    text     NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    email        text     NOT NULL,
    token_hash   text     NOT NULL UNIQUE,
    status       text     NOT NULL,
    expires_at   datetime NOT NULL,
    email_status text     NOT NULL,
    email_error  text     NOT NULL DEFAULT '',
    invited_by   text     NOT NULL DEFAULT '',
    accepted_by  text,
    accepted_at  datetime,
    created_at   datetime NOT NULL,
    updated_at   datetime NOT NULL
);
CREATE INDEX invitations_member ON invitations (member_id, created_at);
CREATE INDEX invitations_org ON invitations (org_id, created_at);
