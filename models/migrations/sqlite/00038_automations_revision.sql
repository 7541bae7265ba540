-- Every change a workspace makes is matched against its active automation
-- rules (record.Tx.Emit). Each process keeps the rules it read, decoded,
-- under the organization's automations revision, and re-reads that one
-- value instead of the rules: it reads the rules again only when the
-- revision has moved. A trigger gives the organization a new revision in
-- the same transaction as any insert, change or delete of one of its rules,
-- whoever writes it (the API, `suite admin`, an operator's SQL). A random
-- value, not a counter: a process that serves two databases (the tests)
-- can never take one's rules for the other's. NULL: the organization has
-- never had a rule, and no rule is read.

-- +goose Up
ALTER TABLE organizations ADD COLUMN automations_revision text;
UPDATE organizations SET automations_revision = lower(hex(randomblob(16))) WHERE id IN (SELECT org_id FROM automations);

-- +goose StatementBegin
CREATE TRIGGER automations_revision_insert AFTER INSERT ON automations
BEGIN
    UPDATE organizations SET automations_revision = lower(hex(randomblob(16))) WHERE id = NEW.org_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER automations_revision_update AFTER UPDATE ON automations
BEGIN
    UPDATE organizations SET automations_revision = lower(hex(randomblob(16))) WHERE id IN (OLD.org_id, NEW.org_id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER automations_revision_delete AFTER DELETE ON automations
BEGIN
    UPDATE organizations SET automations_revision = lower(hex(randomblob(16))) WHERE id = OLD.org_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER automations_revision_insert;
DROP TRIGGER automations_revision_update;
DROP TRIGGER automations_revision_delete;
ALTER TABLE organizations DROP COLUMN automations_revision;
