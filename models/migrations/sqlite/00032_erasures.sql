-- A person's erasure (GDPR article 17, issue 48). An erasure is asked for
-- (state pending, with the hash of a confirmation token), confirmed by a
-- second call within 15 minutes (running: its Erasure workflow deletes or
-- anonymizes the person's rows), and kept as the record of who asked and
-- when (done). The address itself is held only while the erasure is
-- pending or running (email, emptied when it ends); email_hash, a hash of
-- the organization and the address, lets intake refuse the address until
-- blocked_until (docs/decisions.md, "Erasure").

-- +goose Up
CREATE TABLE erasures (
    id            text        PRIMARY KEY,
    org_id        text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email_hash    text        NOT NULL,
    email         text        NOT NULL DEFAULT '',
    token_hash    text        NOT NULL DEFAULT '',
    state         text        NOT NULL CHECK (state IN ('pending', 'running', 'done')),
    found         text        NOT NULL DEFAULT '{}',
    erased        text        NOT NULL DEFAULT '{}',
    requested_by  text        NOT NULL,
    confirmed_by  text        NOT NULL DEFAULT '',
    created_at    datetime    NOT NULL,
    confirm_by    datetime    NOT NULL,
    confirmed_at  datetime,
    finished_at   datetime,
    blocked_until datetime
);
CREATE INDEX erasures_org ON erasures (org_id, created_at DESC, id DESC);
CREATE INDEX erasures_block ON erasures (org_id, email_hash, blocked_until);

-- +goose Down
DROP TABLE erasures;
