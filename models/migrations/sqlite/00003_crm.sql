-- CRM: contacts, deals with stage history, leads with activities and the
-- web-form intake, tasks, notifications, and round-robin assignment state.
-- Every list index starts with org_id and ends with the sort key.

-- +goose Up
CREATE TABLE contacts (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    email       text        NOT NULL DEFAULT '',
    phone       text        NOT NULL DEFAULT '',
    company     text        NOT NULL DEFAULT '',
    designation text        NOT NULL DEFAULT '',
    type        text        NOT NULL,
    notes       text        NOT NULL DEFAULT '',
    created_by  text        NOT NULL DEFAULT '',
    created_at  datetime NOT NULL,
    updated_at  datetime NOT NULL
);
CREATE INDEX contacts_org_created ON contacts (org_id, created_at, id);
CREATE INDEX contacts_org_type_created ON contacts (org_id, type, created_at, id);
CREATE INDEX contacts_org_email ON contacts (org_id, email);

CREATE TABLE leads (
    id               text          PRIMARY KEY,
    org_id           text          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name             text          NOT NULL DEFAULT '',
    email            text          NOT NULL DEFAULT '',
    phone            text          NOT NULL DEFAULT '',
    company          text          NOT NULL DEFAULT '',
    value            numeric NOT NULL DEFAULT 0,
    source           text          NOT NULL DEFAULT '',
    status           text          NOT NULL,
    score            integer       NOT NULL DEFAULT 0,
    probability      real NOT NULL DEFAULT 0,
    score_factors    text          NOT NULL DEFAULT '[]',
    assigned_to_id   text          REFERENCES members (id) ON DELETE SET NULL,
    -- SQLite resolves a reference when a row is written, so deals may be
    -- created after this table.
    contact_id       text          REFERENCES contacts (id) ON DELETE SET NULL,
    deal_id          text          REFERENCES deals (id) ON DELETE SET NULL,
    last_activity_at datetime,
    created_by       text          NOT NULL DEFAULT '',
    created_at       datetime   NOT NULL,
    updated_at       datetime   NOT NULL
);
-- One lead per e-mail address in an organization: intake dedupes on it.
CREATE UNIQUE INDEX leads_org_email ON leads (org_id, email) WHERE email <> '';
CREATE INDEX leads_org_created ON leads (org_id, created_at, id);
CREATE INDEX leads_org_status_created ON leads (org_id, status, created_at, id);
CREATE INDEX leads_org_assignee_created ON leads (org_id, assigned_to_id, created_at, id);

CREATE TABLE lead_activities (
    id          text        PRIMARY KEY,
    org_id      text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    lead_id     text        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    type        text        NOT NULL,
    body        text        NOT NULL,
    occurred_at datetime NOT NULL,
    created_by  text        NOT NULL DEFAULT '',
    created_at  datetime NOT NULL
);
CREATE INDEX lead_activities_lead_occurred ON lead_activities (lead_id, occurred_at, id);

CREATE TABLE lead_intakes (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    dedupe_key   text        NOT NULL,
    lead_id      text        NOT NULL,
    payload      text        NOT NULL,
    status       text        NOT NULL,
    duplicate    boolean     NOT NULL DEFAULT false,
    created_at   datetime NOT NULL,
    processed_at datetime
);
CREATE UNIQUE INDEX lead_intakes_org_key ON lead_intakes (org_id, dedupe_key);

CREATE TABLE deals (
    id               text          PRIMARY KEY,
    org_id           text          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title            text          NOT NULL,
    amount           numeric NOT NULL DEFAULT 0,
    currency         text          NOT NULL,
    stage            text          NOT NULL,
    close_date       text          NOT NULL DEFAULT '',
    company_name     text          NOT NULL DEFAULT '',
    contact_email    text          NOT NULL DEFAULT '',
    contact_id       text          REFERENCES contacts (id) ON DELETE SET NULL,
    lead_id          text          REFERENCES leads (id) ON DELETE SET NULL,
    assigned_to_id   text          REFERENCES members (id) ON DELETE SET NULL,
    lost_reason      text          NOT NULL DEFAULT '',
    created_by       text          NOT NULL DEFAULT '',
    stage_changed_at datetime   NOT NULL,
    won_at           datetime,
    created_at       datetime   NOT NULL,
    updated_at       datetime   NOT NULL
);
CREATE INDEX deals_org_created ON deals (org_id, created_at, id);
CREATE INDEX deals_org_stage_created ON deals (org_id, stage, created_at, id);
CREATE INDEX deals_org_assignee_created ON deals (org_id, assigned_to_id, created_at, id);
CREATE INDEX deals_org_won ON deals (org_id, won_at) WHERE stage = 'WON';

CREATE TABLE deal_stage_changes (
    id         text        PRIMARY KEY,
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    deal_id    text        NOT NULL REFERENCES deals (id) ON DELETE CASCADE,
    from_stage text        NOT NULL,
    to_stage   text        NOT NULL,
    changed_by text        NOT NULL DEFAULT '',
    created_at datetime NOT NULL
);
CREATE INDEX deal_stage_changes_deal ON deal_stage_changes (deal_id, created_at, id);

CREATE TABLE tasks (
    id             text        PRIMARY KEY,
    org_id         text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title          text        NOT NULL,
    description    text        NOT NULL DEFAULT '',
    due_date       text        NOT NULL DEFAULT '',
    priority       text        NOT NULL,
    status         text        NOT NULL,
    assigned_to_id text        REFERENCES members (id) ON DELETE SET NULL,
    lead_id        text        REFERENCES leads (id) ON DELETE SET NULL,
    deal_id        text        REFERENCES deals (id) ON DELETE SET NULL,
    contact_id     text        REFERENCES contacts (id) ON DELETE SET NULL,
    created_by     text        NOT NULL DEFAULT '',
    completed_at   datetime,
    created_at     datetime NOT NULL,
    updated_at     datetime NOT NULL
);
CREATE INDEX tasks_org_created ON tasks (org_id, created_at, id);
CREATE INDEX tasks_org_status_due ON tasks (org_id, status, due_date);
CREATE INDEX tasks_org_assignee_created ON tasks (org_id, assigned_to_id, created_at, id);

CREATE TABLE notifications (
    id            text        PRIMARY KEY,
    org_id        text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id     text        NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    type          text        NOT NULL,
    title         text        NOT NULL,
    body          text        NOT NULL DEFAULT '',
    resource_type text        NOT NULL DEFAULT '',
    resource_id   text        NOT NULL DEFAULT '',
    read_at       datetime,
    created_at    datetime NOT NULL
);
CREATE INDEX notifications_member_created ON notifications (org_id, member_id, created_at, id);

CREATE TABLE assignment_cursors (
    org_id         text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    kind           text        NOT NULL,
    last_member_id text,
    updated_at     datetime NOT NULL,
    PRIMARY KEY (org_id, kind)
);
