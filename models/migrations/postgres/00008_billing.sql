-- Billing: subscription changes and their retries, one billing account
-- (Stripe customer) per organization, stored Stripe events, and outbox rows
-- that deliver signals as well as starts.

-- +goose Up
CREATE TABLE billing_accounts (
    org_id                 uuid        PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    -- Set once and never replaced: one Stripe customer per organization, ever.
    stripe_customer_id     text        NOT NULL DEFAULT '',
    stripe_subscription_id text        NOT NULL DEFAULT '',
    subscription_status    text        NOT NULL DEFAULT '',
    plan                   text        NOT NULL DEFAULT '',
    billing_interval       text        NOT NULL DEFAULT '',
    stripe_price_id        text        NOT NULL DEFAULT '',
    current_period_end     timestamptz,
    cancel_at_period_end   boolean     NOT NULL DEFAULT false,
    last_event_at          timestamptz,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL
);
CREATE UNIQUE INDEX billing_accounts_customer ON billing_accounts (stripe_customer_id) WHERE stripe_customer_id <> '';
CREATE INDEX billing_accounts_subscription ON billing_accounts (stripe_subscription_id) WHERE stripe_subscription_id <> '';

CREATE TABLE subscription_changes (
    id                       uuid        PRIMARY KEY,
    org_id                   uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    kind                     text        NOT NULL,
    from_plan                text        NOT NULL,
    to_plan                  text        NOT NULL REFERENCES plans (name),
    billing_interval         text        NOT NULL,
    status                   text        NOT NULL,
    step                     text        NOT NULL DEFAULT '',
    attempts                 integer     NOT NULL DEFAULT 1,
    last_error_code          text        NOT NULL DEFAULT '',
    last_error_message       text        NOT NULL DEFAULT '',
    stripe_customer_id       text        NOT NULL DEFAULT '',
    stripe_subscription_id   text        NOT NULL DEFAULT '',
    stripe_price_id          text        NOT NULL DEFAULT '',
    stripe_invoice_id        text        NOT NULL DEFAULT '',
    stripe_payment_intent_id text        NOT NULL DEFAULT '',
    client_secret            text        NOT NULL DEFAULT '',
    hosted_invoice_url       text        NOT NULL DEFAULT '',
    effective_at             timestamptz,
    requested_by             text        NOT NULL DEFAULT '',
    completed_at             timestamptz,
    created_at               timestamptz NOT NULL,
    updated_at               timestamptz NOT NULL
);
-- One open change per organization, enforced by the database as well.
CREATE UNIQUE INDEX subscription_changes_one_open ON subscription_changes (org_id)
    WHERE status IN ('pending', 'awaiting_payment', 'scheduled');
CREATE INDEX subscription_changes_org_created ON subscription_changes (org_id, created_at, id);
CREATE INDEX subscription_changes_status_created ON subscription_changes (status, created_at, id);
CREATE INDEX subscription_changes_subscription ON subscription_changes (stripe_subscription_id) WHERE stripe_subscription_id <> '';

CREATE TABLE subscription_change_retries (
    id           uuid        PRIMARY KEY,
    change_id    uuid        NOT NULL REFERENCES subscription_changes (id) ON DELETE CASCADE,
    org_id       uuid        NOT NULL,
    number       integer     NOT NULL,
    requested_by text        NOT NULL,
    from_step    text        NOT NULL DEFAULT '',
    error_code   text        NOT NULL DEFAULT '',
    outcome      text        NOT NULL,
    outcome_code text        NOT NULL DEFAULT '',
    outcome_at   timestamptz,
    created_at   timestamptz NOT NULL,
    UNIQUE (change_id, number)
);

CREATE TABLE stripe_events (
    id                text        PRIMARY KEY,
    type              text        NOT NULL,
    org_id            text        NOT NULL DEFAULT '',
    change_id         text        NOT NULL DEFAULT '',
    subscription_id   text        NOT NULL DEFAULT '',
    outcome           text        NOT NULL DEFAULT '',
    payload           text        NOT NULL,
    stripe_created_at timestamptz NOT NULL,
    received_at       timestamptz NOT NULL,
    processed_at      timestamptz
);
CREATE INDEX stripe_events_org_received ON stripe_events (org_id, received_at);

-- Outbox rows may now deliver a signal (signal_name set): to a running
-- workflow, or with signal-with-start when workflow_type is set too. Many
-- signals go to one workflow, so the workflow id is unique among starts only.
ALTER TABLE workflow_starts ADD COLUMN signal_name text NOT NULL DEFAULT '';
ALTER TABLE workflow_starts ADD COLUMN signal_input text NOT NULL DEFAULT '';
ALTER TABLE workflow_starts DROP CONSTRAINT workflow_starts_workflow_id_key;
CREATE UNIQUE INDEX workflow_starts_start_once ON workflow_starts (workflow_id) WHERE signal_name = '';
