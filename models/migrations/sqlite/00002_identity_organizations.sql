-- Identity service tables (identity_*), plans, and the CRM's organizations,
-- members and API keys.

-- +goose Up
CREATE TABLE identity_users (
    id            text        PRIMARY KEY,
    email         text        NOT NULL UNIQUE,
    name          text        NOT NULL,
    password_hash text        NOT NULL,
    created_at    datetime NOT NULL,
    updated_at    datetime NOT NULL
);

CREATE TABLE identity_refresh_tokens (
    id         text        PRIMARY KEY,
    user_id    text        NOT NULL REFERENCES identity_users (id) ON DELETE CASCADE,
    family_id  text        NOT NULL,
    token_hash text        NOT NULL UNIQUE,
    expires_at datetime NOT NULL,
    used_at    datetime,
    revoked_at datetime,
    created_at datetime NOT NULL
);
CREATE INDEX identity_refresh_tokens_family ON identity_refresh_tokens (family_id);
CREATE INDEX identity_refresh_tokens_user ON identity_refresh_tokens (user_id);

CREATE TABLE identity_signing_keys (
    kid          text        PRIMARY KEY,
    private_seed blob       NOT NULL,
    created_at   datetime NOT NULL
);

CREATE TABLE identity_orgs (
    id         text        PRIMARY KEY,
    name       text        NOT NULL,
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL
);

CREATE TABLE identity_memberships (
    org_id     text        NOT NULL REFERENCES identity_orgs (id) ON DELETE CASCADE,
    user_id    text        NOT NULL REFERENCES identity_users (id) ON DELETE CASCADE,
    role       text        NOT NULL,
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX identity_memberships_user ON identity_memberships (user_id);

CREATE TABLE plans (
    name              text        PRIMARY KEY,
    seats             integer,
    tickets_per_month integer,
    ai                boolean     NOT NULL,
    created_at        datetime NOT NULL,
    updated_at        datetime NOT NULL
);
-- NULL means unlimited.
INSERT INTO plans (name, seats, tickets_per_month, ai, created_at, updated_at) VALUES
    ('free',       2,    100,   false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('starter',    5,    1000,  false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('business',   25,   10000, true,  CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('enterprise', NULL, NULL,  true,  CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);

CREATE TABLE organizations (
    id             text        PRIMARY KEY,
    name           text        NOT NULL,
    status         text        NOT NULL,
    failure_reason text        NOT NULL DEFAULT '',
    plan           text        NOT NULL REFERENCES plans (name),
    timezone       text        NOT NULL DEFAULT 'UTC',
    currency       text        NOT NULL DEFAULT 'USD',
    website        text        NOT NULL DEFAULT '',
    industry       text        NOT NULL DEFAULT '',
    phone          text        NOT NULL DEFAULT '',
    address        text        NOT NULL DEFAULT '',
    created_by     text        NOT NULL,
    created_at     datetime NOT NULL,
    updated_at     datetime NOT NULL
);

CREATE TABLE members (
    id         text          PRIMARY KEY,
    org_id     text          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id    text,
    email      text          NOT NULL,
    name       text          NOT NULL DEFAULT '',
    role       text          NOT NULL,
    status     text          NOT NULL,
    target     numeric NOT NULL DEFAULT 0,
    invited_by text,
    created_at datetime   NOT NULL,
    updated_at datetime   NOT NULL
);
CREATE UNIQUE INDEX members_org_email ON members (org_id, email);
CREATE UNIQUE INDEX members_org_user ON members (org_id, user_id);
CREATE INDEX members_org_created ON members (org_id, created_at, id);
CREATE INDEX members_user ON members (user_id);
CREATE INDEX members_invited_email ON members (email) WHERE status = 'invited';

CREATE TABLE api_keys (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    service      text        NOT NULL,
    prefix       text        NOT NULL,
    last4        text        NOT NULL,
    hash         text        NOT NULL UNIQUE,
    created_by   text        NOT NULL DEFAULT '',
    created_at   datetime NOT NULL,
    last_used_at datetime,
    revoked_at   datetime
);
CREATE INDEX api_keys_org_created ON api_keys (org_id, created_at, id);
