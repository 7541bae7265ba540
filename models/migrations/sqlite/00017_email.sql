-- The Helpdesk's e-mail channel (issue 32): inbound messages stored raw
-- before they are accepted, every message of a ticket's thread by its
-- Message-ID (how a reply finds its ticket, and how an outbound reply's
-- delivery is told), the attachments of inbound mail, the workspaces' own
-- support addresses, and a workspace's channel settings.

-- +goose Up
CREATE TABLE email_channels (
    org_id      text        PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    acknowledge boolean     NOT NULL DEFAULT false,
    created_at  datetime    NOT NULL,
    updated_at  datetime    NOT NULL
);

CREATE TABLE email_addresses (
    id         text        PRIMARY KEY,
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    address    text        NOT NULL UNIQUE,
    created_at datetime    NOT NULL
);
CREATE INDEX email_addresses_org ON email_addresses (org_id, created_at, id);

CREATE TABLE inbound_emails (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    message_id   text        NOT NULL,
    mail_from    text        NOT NULL,
    rcpt         text        NOT NULL,
    via          text        NOT NULL,
    raw          blob        NOT NULL,
    size         integer     NOT NULL,
    status       text        NOT NULL,
    reason       text        NOT NULL DEFAULT '',
    ticket_id    text        REFERENCES tickets (id) ON DELETE SET NULL,
    comment_id   text        REFERENCES ticket_comments (id) ON DELETE SET NULL,
    received_at  datetime    NOT NULL,
    processed_at datetime   
);
CREATE UNIQUE INDEX inbound_emails_message ON inbound_emails (org_id, message_id);
CREATE INDEX inbound_emails_org_received ON inbound_emails (org_id, received_at, id);

CREATE TABLE email_messages (
    org_id     text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    message_id text        NOT NULL,
    ticket_id  text        NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    comment_id text        REFERENCES ticket_comments (id) ON DELETE CASCADE,
    direction  text        NOT NULL,
    status     text        NOT NULL,
    error      text        NOT NULL DEFAULT '',
    created_at datetime    NOT NULL,
    updated_at datetime    NOT NULL,
    PRIMARY KEY (org_id, message_id)
);
CREATE INDEX email_messages_ticket ON email_messages (ticket_id, created_at);
CREATE INDEX email_messages_comment ON email_messages (comment_id);

CREATE TABLE ticket_attachments (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    ticket_id    text        NOT NULL REFERENCES tickets (id) ON DELETE CASCADE,
    comment_id   text        REFERENCES ticket_comments (id) ON DELETE CASCADE,
    filename     text        NOT NULL,
    content_type text        NOT NULL,
    size         integer     NOT NULL,
    content      blob        NOT NULL,
    created_at   datetime    NOT NULL
);
CREATE INDEX ticket_attachments_ticket ON ticket_attachments (ticket_id, created_at);

ALTER TABLE tickets ADD COLUMN follows_ticket_id text REFERENCES tickets (id) ON DELETE SET NULL;
