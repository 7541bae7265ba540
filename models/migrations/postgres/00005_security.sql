-- Security fixes (issue 9): short idempotency leases, revoked sign-in
-- sessions, push subscriptions per member, anonymous lead intakes,
-- plain-text knowledge-base search, and invitations with secret tokens.

-- +goose Up

-- An in-flight Idempotency-Key is claimed until locked_until; the request
-- renews the claim while it runs.
ALTER TABLE idempotency_keys ADD COLUMN locked_until timestamptz;
UPDATE idempotency_keys SET locked_until = created_at;
ALTER TABLE idempotency_keys ALTER COLUMN locked_until SET NOT NULL;

-- Sign-ins (refresh-token families) revoked before their access tokens
-- expire; every API process refuses those tokens. Rows are kept until the
-- last access token of the session has expired.
CREATE TABLE identity_revoked_sessions (
    session_id text        PRIMARY KEY,
    revoked_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX identity_revoked_sessions_expires ON identity_revoked_sessions (expires_at);

-- A push endpoint may be registered by several members (one browser
-- profile, two accounts); each registration is its own row.
ALTER TABLE push_subscriptions DROP CONSTRAINT push_subscriptions_endpoint_key;
DROP INDEX push_subscriptions_member;
CREATE UNIQUE INDEX push_subscriptions_member_endpoint ON push_subscriptions (member_id, endpoint);

-- Whether the intake came with the organization's crm_ key: only those may
-- change an existing lead.
ALTER TABLE lead_intakes ADD COLUMN authenticated boolean NOT NULL DEFAULT false;

-- Knowledge-base search runs over the article's plain text (Markdown
-- stripped), so snippets carry no Markdown. The Go migration that follows
-- fills body_text for existing articles.
DROP INDEX kb_articles_search;
ALTER TABLE kb_articles DROP COLUMN search_vector;
ALTER TABLE kb_articles ADD COLUMN body_text text NOT NULL DEFAULT '';
ALTER TABLE kb_articles ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '')), 'A') ||
    setweight(to_tsvector('english', coalesce(body_text, '')), 'B')
) STORED;
CREATE INDEX kb_articles_search ON kb_articles USING GIN (search_vector);

-- Server-side secrets generated once (e.g. the key invitation tokens are
-- derived from).
CREATE TABLE server_secrets (
    name       text        PRIMARY KEY,
    secret     bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

-- An invitation of a (pending) member: a secret token, stored as its
-- SHA-256, accepted once before it expires.
CREATE TABLE invitations (
    id           uuid        PRIMARY KEY,
    org_id       uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id    uuid        NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    email        text        NOT NULL,
    token_hash   text        NOT NULL UNIQUE,
    status       text        NOT NULL,
    expires_at   timestamptz NOT NULL,
    email_status text        NOT NULL,
    email_error  text        NOT NULL DEFAULT '',
    invited_by   text        NOT NULL DEFAULT '',
    accepted_by  text,
    accepted_at  timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX invitations_member ON invitations (member_id, created_at);
CREATE INDEX invitations_org ON invitations (org_id, created_at);
