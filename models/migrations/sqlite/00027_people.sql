-- One person across CRM and Helpdesk (issue 47): a contact and a customer
-- of one organization with the same e-mail (stored normalized: trimmed,
-- lower-case) are one person. Each contact points at the customer of its
-- e-mail (unique per organization); each customer at the oldest contact
-- of its e-mail. Kept by models.LinkPeople in the transaction of every
-- change that creates, re-addresses or deletes either; linked here for
-- the rows that exist.

-- +goose Up
-- Without REFERENCES here: SQLite cannot drop a column a foreign key
-- names (the down step), and a deletion re-links its e-mail's rows
-- anyway (models.LinkPeople).
ALTER TABLE contacts ADD COLUMN customer_id text;
ALTER TABLE customers ADD COLUMN contact_id text;
UPDATE contacts SET customer_id = (SELECT c.id FROM customers c WHERE c.org_id = contacts.org_id AND c.email = contacts.email)
WHERE email <> '';
UPDATE customers SET contact_id = (SELECT k.id FROM contacts k WHERE k.org_id = customers.org_id AND k.email = customers.email
                                   ORDER BY k.created_at, k.id LIMIT 1)
WHERE email <> '';
-- A person's timeline reads a contact's deals, tasks and leads.
CREATE INDEX deals_contact ON deals (contact_id, created_at, id) WHERE contact_id IS NOT NULL;
CREATE INDEX tasks_contact ON tasks (contact_id, created_at, id) WHERE contact_id IS NOT NULL;
CREATE INDEX leads_contact ON leads (contact_id, created_at, id) WHERE contact_id IS NOT NULL;

-- +goose Down
DROP INDEX leads_contact;
DROP INDEX tasks_contact;
DROP INDEX deals_contact;
ALTER TABLE customers DROP COLUMN contact_id;
ALTER TABLE contacts DROP COLUMN customer_id;
