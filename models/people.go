package models

import (
	"slices"

	"gorm.io/gorm"
)

// One person across CRM and Helpdesk: a contact and a customer of one
// organization with the same e-mail (stored normalized, NormalizeEmail)
// are one person. A contact's CustomerID is the customer of its e-mail
// (customers' e-mails are unique in an organization); a customer's
// ContactID is the oldest contact of its e-mail (contacts' are not).

// LinkPeople sets the links of orgID's contacts and customers whose
// e-mail is one of emails, from the rows as they are in tx: call it in
// the transaction of a change that creates, re-addresses or deletes a
// contact or a customer, with every e-mail the change touched (the old
// one and the new). Blank e-mails link nothing.
func LinkPeople(tx *gorm.DB, orgID string, emails ...string) error {
	emails = slices.DeleteFunc(slices.Clone(emails), func(e string) bool { return e == "" })
	if len(emails) == 0 {
		return nil
	}
	slices.Sort(emails)
	emails = slices.Compact(emails)
	err := tx.Exec(`UPDATE contacts SET customer_id = (SELECT c.id FROM customers c WHERE c.org_id = contacts.org_id AND c.email = contacts.email)
		WHERE org_id = ? AND email IN ?`, orgID, emails).Error
	if err != nil {
		return err
	}
	return tx.Exec(`UPDATE customers SET contact_id = (SELECT k.id FROM contacts k WHERE k.org_id = customers.org_id AND k.email = customers.email
		ORDER BY k.created_at, k.id LIMIT 1) WHERE org_id = ? AND email IN ?`, orgID, emails).Error
}

// AnyCustomerOf is a query, on an organization's id and an e-mail, that
// finds a row when the organization has a customer of that e-mail: a
// contact created in one statement (database.InsertUnless) without it
// has nobody to be linked to.
const AnyCustomerOf = "SELECT 1 FROM customers WHERE org_id = ? AND email = ?"

// LinkContact links ct (created, re-addressed) and the rows of its
// e-mail, and reads its link back into it; old is its e-mail before the
// change ("" for a new one), whose rows are linked anew too.
func LinkContact(tx *gorm.DB, ct *Contact, old string) (err error) {
	ct.CustomerID, err = relink(tx, "contacts", "customer_id", ct.OrgID, ct.ID, ct.Email, old)
	return err
}

// LinkCustomer is LinkContact for a customer.
func LinkCustomer(tx *gorm.DB, c *Customer, old string) (err error) {
	c.ContactID, err = relink(tx, "customers", "contact_id", c.OrgID, c.ID, c.Email, old)
	return err
}

// relink links the rows of emails (LinkPeople) and reads back the link
// column of table's row id.
func relink(tx *gorm.DB, table, column, orgID, id string, emails ...string) (*string, error) {
	if err := LinkPeople(tx, orgID, emails...); err != nil {
		return nil, err
	}
	var row struct{ Link *string }
	err := tx.Raw("SELECT "+column+" AS link FROM "+table+" WHERE id = ?", id).Scan(&row).Error
	return row.Link, err
}

// LinkPeopleOf links the people of emails that table's rows just took
// (an import's batch of contacts or customers): only those with a row of
// the other side's table — a contact with a customer, a customer with a
// contact — can have a link to set or clear, so the others are left as
// written (their link null) rather than rewritten a batch at a time.
func LinkPeopleOf(tx *gorm.DB, orgID, table string, emails ...string) error {
	other := map[string]string{"contacts": "customers", "customers": "contacts"}[table]
	emails = slices.DeleteFunc(slices.Clone(emails), func(e string) bool { return e == "" })
	if other == "" || len(emails) == 0 {
		return nil
	}
	var linked []string
	if err := tx.Table(other).Distinct("email").Where("org_id = ? AND email IN ?", orgID, emails).Pluck("email", &linked).Error; err != nil {
		return err
	}
	return LinkPeople(tx, orgID, linked...)
}
