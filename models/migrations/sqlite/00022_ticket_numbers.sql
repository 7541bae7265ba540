-- PostgreSQL numbers tickets from a sequence per organization from here on
-- (its 00022). SQLite keeps numbering them on the counter row: its writers
-- take turns anyway, so the row's lock costs no concurrency. This empty
-- step keeps both dialects' versions in step.

-- +goose Up
SELECT 1;
