-- Helpdesk: customers with their event history and billable time, tickets
-- with per-organization numbers and comments, the knowledge base (with
-- full-text search), and web-push subscriptions.

-- +goose Up
CREATE TABLE customers (
    id         text        PRIMARY KEY,
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name       text        NOT NULL DEFAULT '',
    email      text        NOT NULL,
    phone      text        NOT NULL DEFAULT '',
    company    text        NOT NULL DEFAULT '',
    notes      text        NOT NULL DEFAULT '',
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL
);
CREATE UNIQUE INDEX customers_org_email ON customers (org_id, email);
CREATE INDEX customers_org_created ON customers (org_id, created_at, id);

-- One row per organization: the last ticket number and the month's count,
-- locked by ticket creation so numbering and the monthly limit are race-safe.
CREATE TABLE ticket_counters (
    org_id      text        PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    last_number integer     NOT NULL,
    month       text        NOT NULL,
    month_count integer     NOT NULL,
    updated_at  datetime NOT NULL
);

CREATE TABLE tickets (
    id                text        PRIMARY KEY,
    org_id            text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    number            integer     NOT NULL,
    subject           text        NOT NULL,
    description       text        NOT NULL DEFAULT '',
    status            text        NOT NULL,
    priority          text        NOT NULL,
    channel           text        NOT NULL,
    customer_id       text        REFERENCES customers (id) ON DELETE SET NULL,
    requester_email   text        NOT NULL DEFAULT '',
    agent_id          text        REFERENCES members (id) ON DELETE SET NULL,
    tags              text        NOT NULL DEFAULT '[]',
    first_response_at datetime,
    solved_at         datetime,
    closed_at         datetime,
    solve_count       integer     NOT NULL DEFAULT 0,
    created_at        datetime NOT NULL,
    updated_at        datetime NOT NULL
);
CREATE UNIQUE INDEX tickets_org_number ON tickets (org_id, number);
CREATE INDEX tickets_org_created ON tickets (org_id, created_at, id);
CREATE INDEX tickets_org_status_created ON tickets (org_id, status, created_at, id);
CREATE INDEX tickets_org_priority_created ON tickets (org_id, priority, created_at, id);
CREATE INDEX tickets_org_agent_created ON tickets (org_id, agent_id, created_at, id);
CREATE INDEX tickets_org_customer_created ON tickets (org_id, customer_id, created_at, id);
CREATE INDEX tickets_org_solved ON tickets (org_id, solved_at);

CREATE TABLE ticket_comments (
    id                 text        PRIMARY KEY,
    org_id             text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    ticket_id          text        NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    author_type        text        NOT NULL,
    author_member_id   text        REFERENCES members (id) ON DELETE SET NULL,
    author_customer_id text        REFERENCES customers (id) ON DELETE SET NULL,
    body               text        NOT NULL,
    public             boolean     NOT NULL,
    created_at         datetime NOT NULL
);
CREATE INDEX ticket_comments_ticket_created ON ticket_comments (ticket_id, created_at, id);

-- The customer's activity feed, written in the same transaction as each change.
CREATE TABLE customer_events (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    customer_id text        NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    ticket_id   text        REFERENCES tickets (id) ON DELETE SET NULL,
    type        text        NOT NULL,
    summary     text        NOT NULL,
    actor       text        NOT NULL DEFAULT '',
    created_at  datetime NOT NULL
);
CREATE INDEX customer_events_customer_created ON customer_events (org_id, customer_id, created_at, id);

CREATE TABLE time_entries (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    customer_id text        NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
    ticket_id   text        NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    member_id   text        REFERENCES members (id) ON DELETE SET NULL,
    minutes     integer     NOT NULL CHECK (minutes BETWEEN 1 AND 1440),
    description text        NOT NULL DEFAULT '',
    billable    boolean     NOT NULL,
    created_at  datetime NOT NULL
);
CREATE INDEX time_entries_customer_created ON time_entries (org_id, customer_id, created_at, id);

CREATE TABLE kb_categories (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    slug        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    position    integer     NOT NULL DEFAULT 0,
    created_at  datetime NOT NULL,
    updated_at  datetime NOT NULL
);
CREATE UNIQUE INDEX kb_categories_org_slug ON kb_categories (org_id, slug);
CREATE INDEX kb_categories_org_position ON kb_categories (org_id, position, name);

CREATE TABLE kb_articles (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    category_id  text        REFERENCES kb_categories (id) ON DELETE SET NULL,
    title        text        NOT NULL,
    slug         text        NOT NULL,
    body         text        NOT NULL DEFAULT '',
    body_html    text        NOT NULL DEFAULT '',
    status       text        NOT NULL,
    views        integer      NOT NULL DEFAULT 0,
    published_at datetime,
    created_at   datetime NOT NULL,
    updated_at   datetime NOT NULL
);
CREATE UNIQUE INDEX kb_articles_org_slug ON kb_articles (org_id, slug);
CREATE INDEX kb_articles_org_status_created ON kb_articles (org_id, status, created_at, id);
-- Ranked full-text search: an FTS5 index over title and body, kept in step
-- by triggers (bm25 weights title above body at query time).
CREATE VIRTUAL TABLE kb_articles_fts USING fts5(title, body, content='kb_articles', content_rowid='rowid', tokenize='porter unicode61');
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_insert AFTER INSERT ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (rowid, title, body) VALUES (new.rowid, new.title, new.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_delete AFTER DELETE ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (kb_articles_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER kb_articles_fts_update AFTER UPDATE OF title, body ON kb_articles BEGIN
    INSERT INTO kb_articles_fts (kb_articles_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
    INSERT INTO kb_articles_fts (rowid, title, body) VALUES (new.rowid, new.title, new.body);
END;
-- +goose StatementEnd

CREATE TABLE push_subscriptions (
    id         text        PRIMARY KEY,
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id  text        NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    endpoint   text        NOT NULL UNIQUE,
    p256dh     text        NOT NULL,
    auth       text        NOT NULL,
    user_agent text        NOT NULL DEFAULT '',
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL
);
CREATE INDEX push_subscriptions_member ON push_subscriptions (member_id);

CREATE TABLE vapid_keys (
    id          text        PRIMARY KEY,
    public_key  text        NOT NULL,
    private_key text        NOT NULL,
    created_at  datetime NOT NULL
);
