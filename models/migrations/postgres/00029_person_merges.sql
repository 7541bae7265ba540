-- Merging duplicates (issue 47): a contact or a customer merged into
-- another. A row per merge, the PersonMerge workflow's record: running
-- until every row of the duplicate points at the survivor and the
-- duplicate is gone, then done. A done row is what answers a read of the
-- merged-away id (301 to the survivor).

-- +goose Up
CREATE TABLE person_merges (
    id          uuid        PRIMARY KEY,
    org_id      uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    object      text        NOT NULL CHECK (object IN ('contact', 'customer')),
    from_id     uuid        NOT NULL,
    into_id     uuid        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('running', 'done')),
    moved       text        NOT NULL DEFAULT '{}',
    created_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    finished_at timestamptz
);
-- A record is merged away once.
CREATE UNIQUE INDEX person_merges_from ON person_merges (org_id, object, from_id);
CREATE INDEX person_merges_into ON person_merges (org_id, object, into_id) WHERE status = 'running';
CREATE INDEX person_merges_org ON person_merges (org_id, created_at, id);

-- +goose Down
DROP TABLE person_merges;
