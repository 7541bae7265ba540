-- Duplicate contacts (issue 47): GET /crm/contacts/duplicates pairs the
-- contacts of an organization that share an e-mail (contacts_org_email
-- serves it) or a name and a company (this index: the same expressions
-- the query compares).

-- +goose Up
CREATE INDEX contacts_org_name_company ON contacts (org_id, lower(name), lower(company)) WHERE company <> '';

-- +goose Down
DROP INDEX contacts_org_name_company;
