-- Generative AI: documents, jobs with their results, the result cache, token
-- usage per organization and month, and each plan's monthly token quota.

-- +goose Up
-- NULL means unlimited; 0 means the plan has no AI.
ALTER TABLE plans ADD COLUMN ai_tokens_per_month integer;
UPDATE plans SET ai_tokens_per_month = 0 WHERE name IN ('free', 'starter');
UPDATE plans SET ai_tokens_per_month = 1000000 WHERE name = 'business';

-- A document is either text (content) or a reference to a record of the
-- suite (source + source_id) whose text is assembled when a job runs.
CREATE TABLE ai_documents (
    id           text        PRIMARY KEY,
    org_id       text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title        text        NOT NULL DEFAULT '',
    content      text        NOT NULL DEFAULT '',
    content_type text        NOT NULL DEFAULT '',
    source       text        NOT NULL DEFAULT '',
    source_id    text,
    created_by   text        NOT NULL DEFAULT '',
    created_at   datetime    NOT NULL,
    updated_at   datetime    NOT NULL
);
CREATE INDEX ai_documents_org_created ON ai_documents (org_id, created_at, id);

-- A job keeps the exact text it processed (input_text), so it stays
-- meaningful after its document is deleted or its record changes;
-- document_id is therefore history, not a foreign key.
CREATE TABLE ai_jobs (
    id                text        PRIMARY KEY,
    org_id            text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    kind              text        NOT NULL,
    document_id       text,
    input_data        text        NOT NULL DEFAULT '',
    input_format      text        NOT NULL DEFAULT '',
    options           text        NOT NULL DEFAULT '{}',
    refresh           boolean     NOT NULL DEFAULT false,
    status            text        NOT NULL,
    error_code        text        NOT NULL DEFAULT '',
    error_message     text        NOT NULL DEFAULT '',
    input_text        text        NOT NULL DEFAULT '',
    content_hash      text        NOT NULL DEFAULT '',
    cache_key         text        NOT NULL DEFAULT '',
    cached            boolean     NOT NULL DEFAULT false,
    result            text,
    provider          text        NOT NULL DEFAULT '',
    model             text        NOT NULL DEFAULT '',
    prompt_tokens     integer     NOT NULL DEFAULT 0,
    completion_tokens integer     NOT NULL DEFAULT 0,
    model_calls       integer     NOT NULL DEFAULT 0,
    model_ms          integer     NOT NULL DEFAULT 0,
    created_by        text        NOT NULL DEFAULT '',
    created_at        datetime    NOT NULL,
    started_at        datetime   ,
    finished_at       datetime   ,
    updated_at        datetime    NOT NULL
);
CREATE INDEX ai_jobs_org_created ON ai_jobs (org_id, created_at, id);
CREATE INDEX ai_jobs_org_status_created ON ai_jobs (org_id, status, created_at, id);
CREATE INDEX ai_jobs_document ON ai_jobs (document_id);

-- The result cache: one stored output per organization and cache key
-- (content hash + operation + options + provider + model).
CREATE TABLE ai_results (
    org_id            text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    cache_key         text        NOT NULL,
    job_id            text        NOT NULL,
    kind              text        NOT NULL,
    provider          text        NOT NULL,
    model             text        NOT NULL,
    result            text        NOT NULL,
    prompt_tokens     integer     NOT NULL DEFAULT 0,
    completion_tokens integer     NOT NULL DEFAULT 0,
    created_at        datetime    NOT NULL,
    PRIMARY KEY (org_id, cache_key)
);

-- Tokens spent per organization and calendar month (YYYY-MM, in the
-- organization's time zone).
CREATE TABLE ai_usage (
    org_id            text        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    month             text        NOT NULL,
    prompt_tokens     integer     NOT NULL DEFAULT 0,
    completion_tokens integer     NOT NULL DEFAULT 0,
    jobs              integer     NOT NULL DEFAULT 0,
    updated_at        datetime    NOT NULL,
    PRIMARY KEY (org_id, month)
);
