-- Rate limits hold across every API replica: each bucket's requests are
-- counted per fixed window in the database (api/web/ratelimit.go estimates
-- a sliding window from the current and the previous one). Rows expire two
-- windows after they began and are purged by the API.

-- +goose Up
CREATE TABLE rate_counters (
    bucket       text     NOT NULL,
    window_start datetime NOT NULL,
    hits         integer  NOT NULL,
    expires_at   datetime NOT NULL,
    PRIMARY KEY (bucket, window_start)
);
CREATE INDEX rate_counters_expires ON rate_counters (expires_at);
