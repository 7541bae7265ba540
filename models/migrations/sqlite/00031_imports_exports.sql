-- Import and export (issue 48). An import or an export is a row here,
-- its Import or Export workflow's record and progress; the file it reads
-- or writes is stored in the database in parts of at most 1 MiB
-- (file_parts), so that every API and worker process reads it and none
-- holds all of it. An import's failed rows are import_errors, its error
-- file. Rows expire (expires_at): an import's record after 90 days, an
-- export's file after 7 (docs/decisions.md, "Import and export").

-- +goose Up
CREATE TABLE imports (
    id            text        PRIMARY KEY,
    org_id        text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    object        text        NOT NULL,
    format        text        NOT NULL CHECK (format IN ('csv', 'ndjson')),
    mode          text        NOT NULL CHECK (mode IN ('create', 'upsert')),
    upsert_key    text        NOT NULL DEFAULT '',
    dry_run       boolean     NOT NULL DEFAULT false,
    mapping       text        NOT NULL DEFAULT '{}',
    columns       text        NOT NULL DEFAULT '[]',
    filename      text        NOT NULL DEFAULT '',
    encoding      text        NOT NULL DEFAULT 'utf-8',
    size          bigint      NOT NULL DEFAULT 0,
    state         text        NOT NULL CHECK (state IN ('queued', 'validating', 'running', 'done', 'failed', 'cancelled')),
    total         bigint,
    processed     bigint      NOT NULL DEFAULT 0,
    created       bigint      NOT NULL DEFAULT 0,
    updated       bigint      NOT NULL DEFAULT 0,
    skipped       bigint      NOT NULL DEFAULT 0,
    failed        bigint      NOT NULL DEFAULT 0,
    next_offset   bigint      NOT NULL DEFAULT 0,
    next_line     bigint      NOT NULL DEFAULT 0,
    error         text        NOT NULL DEFAULT '',
    created_by    text        NOT NULL DEFAULT '',
    created_at    datetime NOT NULL,
    updated_at    datetime NOT NULL,
    started_at    datetime,
    finished_at   datetime,
    expires_at    datetime NOT NULL
);
CREATE INDEX imports_org ON imports (org_id, created_at, id);
CREATE INDEX imports_expiry ON imports (expires_at);

CREATE TABLE import_errors (
    import_id text   NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
    line      bigint NOT NULL,
    "column"  text   NOT NULL,
    reason    text   NOT NULL,
    PRIMARY KEY (import_id, line, "column")
);

CREATE TABLE exports (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    object       text        NOT NULL,
    format       text        NOT NULL CHECK (format IN ('csv', 'ndjson', 'json')),
    filters      text        NOT NULL DEFAULT '{}',
    columns      text        NOT NULL DEFAULT '[]',
    state        text        NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    total        bigint,
    processed    bigint      NOT NULL DEFAULT 0,
    size         bigint      NOT NULL DEFAULT 0,
    parts        integer     NOT NULL DEFAULT 0,
    after_at     datetime,
    after_id     text        NOT NULL DEFAULT '',
    error        text        NOT NULL DEFAULT '',
    created_by   text        NOT NULL DEFAULT '',
    created_at   datetime NOT NULL,
    updated_at   datetime NOT NULL,
    started_at   datetime,
    finished_at  datetime,
    expires_at   datetime NOT NULL
);
CREATE INDEX exports_org ON exports (org_id, created_at, id);
CREATE INDEX exports_expiry ON exports (expires_at);

CREATE TABLE file_parts (
    file_id text    NOT NULL,
    seq     integer NOT NULL,
    org_id  text    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    data    blob    NOT NULL,
    PRIMARY KEY (file_id, seq)
);

-- +goose Down
DROP TABLE file_parts;
DROP TABLE exports;
DROP TABLE import_errors;
DROP TABLE imports;
