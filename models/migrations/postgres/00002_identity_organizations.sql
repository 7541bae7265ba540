-- Identity service tables (identity_*), plans, and the CRM's organizations,
-- members and API keys.

-- +goose Up
CREATE TABLE identity_users (
    id            uuid        PRIMARY KEY,
    email         text        NOT NULL UNIQUE,
    name          text        NOT NULL,
    password_hash text        NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE identity_refresh_tokens (
    id         uuid        PRIMARY KEY,
    user_id    uuid        NOT NULL REFERENCES identity_users (id) ON DELETE CASCADE,
    family_id  uuid        NOT NULL,
    token_hash text        NOT NULL UNIQUE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz,
    created_at timestamptz NOT NULL
);
CREATE INDEX identity_refresh_tokens_family ON identity_refresh_tokens (family_id);
CREATE INDEX identity_refresh_tokens_user ON identity_refresh_tokens (user_id);

CREATE TABLE identity_signing_keys (
    kid          text        PRIMARY KEY,
    private_seed bytea       NOT NULL,
    created_at   timestamptz NOT NULL
);

CREATE TABLE identity_orgs (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE identity_memberships (
    org_id     uuid        NOT NULL REFERENCES identity_orgs (id) ON DELETE CASCADE,
    user_id    uuid        NOT NULL REFERENCES identity_users (id) ON DELETE CASCADE,
    role       text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX identity_memberships_user ON identity_memberships (user_id);

CREATE TABLE plans (
    name              text        PRIMARY KEY,
    seats             integer,
    tickets_per_month integer,
    ai                boolean     NOT NULL,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);
-- NULL means unlimited.
INSERT INTO plans (name, seats, tickets_per_month, ai, created_at, updated_at) VALUES
    ('free',       2,    100,   false, now(), now()),
    ('starter',    5,    1000,  false, now(), now()),
    ('business',   25,   10000, true,  now(), now()),
    ('enterprise', NULL, NULL,  true,  now(), now());

CREATE TABLE organizations (
    id             uuid        PRIMARY KEY,
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
    -- The creator's user id: text, as an external OIDC provider's subject
    -- need not be a UUID.
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

CREATE TABLE members (
    id         uuid          PRIMARY KEY,
    org_id     uuid          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id    text,
    email      text          NOT NULL,
    name       text          NOT NULL DEFAULT '',
    role       text          NOT NULL,
    status     text          NOT NULL,
    target     numeric(14,2) NOT NULL DEFAULT 0,
    invited_by text,
    created_at timestamptz   NOT NULL,
    updated_at timestamptz   NOT NULL
);
CREATE UNIQUE INDEX members_org_email ON members (org_id, email);
CREATE UNIQUE INDEX members_org_user ON members (org_id, user_id);
CREATE INDEX members_org_created ON members (org_id, created_at, id);
CREATE INDEX members_user ON members (user_id);
CREATE INDEX members_invited_email ON members (email) WHERE status = 'invited';

CREATE TABLE api_keys (
    id           uuid        PRIMARY KEY,
    org_id       uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    service      text        NOT NULL,
    prefix       text        NOT NULL,
    last4        text        NOT NULL,
    hash         text        NOT NULL UNIQUE,
    created_by   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_org_created ON api_keys (org_id, created_at, id);
