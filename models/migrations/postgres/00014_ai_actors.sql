-- The AI tables record who made a document or job in the one actor
-- encoding of every other table (models.Actor): an API key is
-- "key:<API key id>" (they stored "api_key:<id>"). Only ai_ keys reach the
-- AI interface, so no other form was stored.

-- +goose Up
UPDATE ai_documents SET created_by = 'key:' || substr(created_by, 9) WHERE created_by LIKE 'api_key:%';
UPDATE ai_jobs      SET created_by = 'key:' || substr(created_by, 9) WHERE created_by LIKE 'api_key:%';
