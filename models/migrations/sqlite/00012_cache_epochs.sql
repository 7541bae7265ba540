-- API keys are verified through a short-lived cache in every API process
-- (api/auth). A change that can make a cached key invalid — revoked, moved,
-- deleted — bumps the api_keys epoch in the same transaction, whatever
-- wrote it (the API, `suite admin`, an operator's SQL); every process
-- re-reads the epoch at least once a second and empties its cache when it
-- moved. lastUsedAt bookkeeping does not bump it.

-- +goose Up
CREATE TABLE cache_epochs (
    name  text    PRIMARY KEY,
    epoch integer NOT NULL DEFAULT 0
);
INSERT INTO cache_epochs (name, epoch) VALUES ('api_keys', 0);

-- +goose StatementBegin
CREATE TRIGGER api_keys_epoch_update AFTER UPDATE OF revoked_at, org_id, service, hash ON api_keys
BEGIN
    UPDATE cache_epochs SET epoch = epoch + 1 WHERE name = 'api_keys';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER api_keys_epoch_delete AFTER DELETE ON api_keys
BEGIN
    UPDATE cache_epochs SET epoch = epoch + 1 WHERE name = 'api_keys';
END;
-- +goose StatementEnd

