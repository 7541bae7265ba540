-- Custom fields (issue 47): an organization's own fields on contacts,
-- deals, leads, tickets and customers. Their definitions are rows here;
-- their values live on each object, in one JSON object keyed by the
-- field's key. On PostgreSQL it is jsonb with a GIN index (jsonb_path_ops),
-- which serves the lists' equality filters (fields @> '{"plan":"gold"}');
-- range filters read the value out of it (docs/decisions.md, "Custom fields").

-- +goose Up
CREATE TABLE custom_fields (
    id            uuid        PRIMARY KEY,
    org_id        uuid        NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    object        text        NOT NULL CHECK (object IN ('contact', 'deal', 'lead', 'ticket', 'customer')),
    key           text        NOT NULL,
    label         text        NOT NULL,
    type          text        NOT NULL,
    options       text        NOT NULL DEFAULT '[]',
    required      boolean     NOT NULL DEFAULT false,
    default_value text,
    description   text        NOT NULL DEFAULT '',
    status        text        NOT NULL DEFAULT 'active',
    progress      text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX custom_fields_key ON custom_fields (org_id, object, key);
CREATE INDEX custom_fields_org ON custom_fields (org_id, created_at, id);

ALTER TABLE contacts ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';
ALTER TABLE deals ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';
ALTER TABLE leads ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';
ALTER TABLE tickets ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';
ALTER TABLE customers ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';
CREATE INDEX contacts_fields ON contacts USING gin (fields jsonb_path_ops);
CREATE INDEX deals_fields ON deals USING gin (fields jsonb_path_ops);
CREATE INDEX leads_fields ON leads USING gin (fields jsonb_path_ops);
CREATE INDEX tickets_fields ON tickets USING gin (fields jsonb_path_ops);
CREATE INDEX customers_fields ON customers USING gin (fields jsonb_path_ops);

-- +goose Down
ALTER TABLE customers DROP COLUMN fields;
ALTER TABLE tickets DROP COLUMN fields;
ALTER TABLE leads DROP COLUMN fields;
ALTER TABLE deals DROP COLUMN fields;
ALTER TABLE contacts DROP COLUMN fields;
DROP TABLE custom_fields;
