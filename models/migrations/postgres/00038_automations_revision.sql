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
ALTER TABLE organizations ADD COLUMN automations_revision uuid;
UPDATE organizations SET automations_revision = gen_random_uuid() WHERE id IN (SELECT org_id FROM automations);

-- +goose StatementBegin
CREATE FUNCTION bump_automations_revision() RETURNS trigger AS $$
BEGIN
    -- OLD is NULL on an insert, NEW on a delete.
    UPDATE organizations SET automations_revision = gen_random_uuid() WHERE id = NEW.org_id OR id = OLD.org_id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd

CREATE TRIGGER automations_revision AFTER INSERT OR UPDATE OR DELETE ON automations
    FOR EACH ROW EXECUTE FUNCTION bump_automations_revision();

-- +goose Down
DROP TRIGGER automations_revision ON automations;
DROP FUNCTION bump_automations_revision();
ALTER TABLE organizations DROP COLUMN automations_revision;
