-- A customer's contact (customers.contact_id, the person's link) had no
-- index of its own: deleting a contact set its customers' link to NULL
-- by a scan of every customer, once per contact — one delete of a
-- million contacts (the bench's cleanup) ran for more than ten minutes,
-- and one contact's delete cost a scan of the whole table.

-- +goose Up
CREATE INDEX customers_contact ON customers (contact_id) WHERE contact_id IS NOT NULL;

-- +goose Down
DROP INDEX customers_contact;
