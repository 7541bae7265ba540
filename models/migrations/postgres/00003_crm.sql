-- CRM: contacts, deals with stage history, leads with activities and the
-- web-form intake, tasks, notifications, and round-robin assignment state.
-- Every list index starts with org_id and ends with the sort key.

-- +goose Up
CREATE TABLE contacts (
    id          uuid        PRIMARY KEY,
    org_id      uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    email       text        NOT NULL DEFAULT '',
    phone       text        NOT NULL DEFAULT '',
    company     text        NOT NULL DEFAULT '',
    designation text        NOT NULL DEFAULT '',
    type        text        NOT NULL,
    notes       text        NOT NULL DEFAULT '',
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX contacts_org_created ON contacts (org_id, created_at, id);
CREATE INDEX contacts_org_type_created ON contacts (org_id, type, created_at, id);
CREATE INDEX contacts_org_email ON contacts (org_id, email);

CREATE TABLE leads (
    id               uuid          PRIMARY KEY,
    org_id           uuid          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name             text          NOT NULL DEFAULT '',
    email            text          NOT NULL DEFAULT '',
    phone            text          NOT NULL DEFAULT '',
    company          text          NOT NULL DEFAULT '',
    value            numeric(14,2) NOT NULL DEFAULT 0,
    source           text          NOT NULL DEFAULT '',
    status           text          NOT NULL,
    score            integer       NOT NULL DEFAULT 0,
    probability      double precision NOT NULL DEFAULT 0,
    score_factors    text          NOT NULL DEFAULT '[]',
    assigned_to_id   uuid          REFERENCES members (id) ON DELETE SET NULL,
    contact_id       uuid,
    deal_id          uuid,
    last_activity_at timestamptz,
    created_by       text          NOT NULL DEFAULT '',
    created_at       timestamptz   NOT NULL,
    updated_at       timestamptz   NOT NULL
);
-- One lead per e-mail address in an organization: intake dedupes on it.
CREATE UNIQUE INDEX leads_org_email ON leads (org_id, email) WHERE email <> '';
CREATE INDEX leads_org_created ON leads (org_id, created_at, id);
CREATE INDEX leads_org_status_created ON leads (org_id, status, created_at, id);
CREATE INDEX leads_org_assignee_created ON leads (org_id, assigned_to_id, created_at, id);

CREATE TABLE lead_activities (
    id          uuid        PRIMARY KEY,
    org_id      uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    lead_id     uuid        NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    type        text        NOT NULL,
    body        text        NOT NULL,
    occurred_at timestamptz NOT NULL,
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX lead_activities_lead_occurred ON lead_activities (lead_id, occurred_at, id);

CREATE TABLE lead_intakes (
    id           uuid        PRIMARY KEY,
    org_id       uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    dedupe_key   text        NOT NULL,
    lead_id      uuid        NOT NULL,
    payload      text        NOT NULL,
    status       text        NOT NULL,
    duplicate    boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    processed_at timestamptz
);
CREATE UNIQUE INDEX lead_intakes_org_key ON lead_intakes (org_id, dedupe_key);

CREATE TABLE deals (
    id               uuid          PRIMARY KEY,
    org_id           uuid          NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title            text          NOT NULL,
    amount           numeric(14,2) NOT NULL DEFAULT 0,
    currency         text          NOT NULL,
    stage            text          NOT NULL,
    close_date       text          NOT NULL DEFAULT '',
    company_name     text          NOT NULL DEFAULT '',
    contact_email    text          NOT NULL DEFAULT '',
    contact_id       uuid          REFERENCES contacts (id) ON DELETE SET NULL,
    lead_id          uuid          REFERENCES leads (id) ON DELETE SET NULL,
    assigned_to_id   uuid          REFERENCES members (id) ON DELETE SET NULL,
    lost_reason      text          NOT NULL DEFAULT '',
    created_by       text          NOT NULL DEFAULT '',
    stage_changed_at timestamptz   NOT NULL,
    won_at           timestamptz,
    created_at       timestamptz   NOT NULL,
    updated_at       timestamptz   NOT NULL
);
CREATE INDEX deals_org_created ON deals (org_id, created_at, id);
CREATE INDEX deals_org_stage_created ON deals (org_id, stage, created_at, id);
CREATE INDEX deals_org_assignee_created ON deals (org_id, assigned_to_id, created_at, id);
CREATE INDEX deals_org_won ON deals (org_id, won_at) WHERE stage = 'WON';

CREATE TABLE deal_stage_changes (
    id         uuid        PRIMARY KEY,
    org_id     uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    deal_id    uuid        NOT NULL REFERENCES deals (id) ON DELETE CASCADE,
    from_stage text        NOT NULL,
    to_stage   text        NOT NULL,
    changed_by text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE INDEX deal_stage_changes_deal ON deal_stage_changes (deal_id, created_at, id);

CREATE TABLE tasks (
    id             uuid        PRIMARY KEY,
    org_id         uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title          text        NOT NULL,
    description    text        NOT NULL DEFAULT '',
    due_date       text        NOT NULL DEFAULT '',
    priority       text        NOT NULL,
    status         text        NOT NULL,
    assigned_to_id uuid        REFERENCES members (id) ON DELETE SET NULL,
    lead_id        uuid        REFERENCES leads (id) ON DELETE SET NULL,
    deal_id        uuid        REFERENCES deals (id) ON DELETE SET NULL,
    contact_id     uuid        REFERENCES contacts (id) ON DELETE SET NULL,
    created_by     text        NOT NULL DEFAULT '',
    completed_at   timestamptz,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
CREATE INDEX tasks_org_created ON tasks (org_id, created_at, id);
CREATE INDEX tasks_org_status_due ON tasks (org_id, status, due_date);
CREATE INDEX tasks_org_assignee_created ON tasks (org_id, assigned_to_id, created_at, id);

CREATE TABLE notifications (
    id            uuid        PRIMARY KEY,
    org_id        uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    member_id     uuid        NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    type          text        NOT NULL,
    title         text        NOT NULL,
    body          text        NOT NULL DEFAULT '',
    resource_type text        NOT NULL DEFAULT '',
    resource_id   text        NOT NULL DEFAULT '',
    read_at       timestamptz,
    created_at    timestamptz NOT NULL
);
CREATE INDEX notifications_member_created ON notifications (org_id, member_id, created_at, id);

-- leads and deals reference each other: the lead's links are added once
-- both tables exist.
ALTER TABLE leads ADD CONSTRAINT leads_contact_fk FOREIGN KEY (contact_id) REFERENCES contacts (id) ON DELETE SET NULL;
ALTER TABLE leads ADD CONSTRAINT leads_deal_fk FOREIGN KEY (deal_id) REFERENCES deals (id) ON DELETE SET NULL;

CREATE TABLE assignment_cursors (
    org_id         uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    kind           text        NOT NULL,
    last_member_id uuid,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (org_id, kind)
);
