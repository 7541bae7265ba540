package models

import (
	"slices"

	"gorm.io/gorm"
)

// The people that import: CRM contacts and Helpdesk customers. A
// contact's upsert finds the oldest contact of the key's value (contacts'
// e-mails need not be unique); a customer's, the one customer of the
// e-mail. Either links its imported rows to the other side's person
// (LinkPeople), once a batch.

// importInsertBatch is how many rows one INSERT writes.
const importInsertBatch = 1000

var contactImport = ImportObject{
	Name: "contacts", App: "crm", FieldObject: AutomationContact,
	Columns: []ImportColumn{
		{Field: "name", Max: 200, Required: true},
		{Field: "email", Max: 254, Check: importedEmail, Address: true},
		{Field: "phone", Max: 50},
		{Field: "company", Max: 200},
		{Field: "designation", Max: 200},
		{Field: "type", Max: 20, Check: oneOf(ContactPerson, ContactCompany)},
		{Field: "notes", Max: 10000},
		{Field: "createdAt", Max: 40, Check: importedTime},
		{Field: "id", Max: 36, Check: anID},
	},
	Keys:          []string{"email", "id"},
	Ignored:       []string{"orgId", "customerId", "updatedAt"},
	write:         writeContacts,
	ExportColumns: []string{"id", "name", "email", "phone", "company", "designation", "type", "notes", "customerId", "createdAt", "updatedAt"},
	Filters:       []string{"type", "q"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		return ContactsMatching(q.Model(&Contact{}), f["type"], f["q"])
	},
}

var customerImport = ImportObject{
	Name: "customers", App: "helpdesk", FieldObject: AutomationCustomer,
	Columns: []ImportColumn{
		{Field: "name", Max: 200, Required: true},
		{Field: "email", Max: 254, Required: true, Check: importedEmail, Address: true},
		{Field: "phone", Max: 50},
		{Field: "company", Max: 200},
		{Field: "notes", Max: 10000},
		{Field: "createdAt", Max: 40, Check: importedTime},
		{Field: "id", Max: 36, Check: anID},
	},
	Keys:          []string{"email", "id"},
	Ignored:       []string{"workspaceId", "contactId", "updatedAt"},
	write:         writeCustomers,
	ExportColumns: []string{"id", "name", "email", "phone", "company", "notes", "contactId", "createdAt", "updatedAt"},
	Filters:       []string{"q"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		return CustomersMatching(q.Model(&Customer{}), f["q"])
	},
}

// keyColumn is the column of an upsert's key.
func keyColumn(key string) string {
	if key == "id" {
		return "id"
	}
	return "email"
}

func writeContacts(w *importWriter, rows []ImportRow) error {
	found := map[string]*Contact{}
	if keys := w.keys(rows); len(keys) > 0 {
		var existing []Contact
		if err := w.tx.Where("org_id = ? AND "+keyColumn(w.imp.UpsertKey)+" IN ?", w.imp.OrgID, keys).
			Order("created_at DESC, id DESC").Find(&existing).Error; err != nil {
			return err
		}
		for i := range existing { // the oldest last, so it is the one kept
			found[keyOfContact(&existing[i], w.imp.UpsertKey)] = &existing[i]
		}
	}
	var created, changed []*Contact
	// emails are the addresses rows took (linked if the other side has
	// them), moved the old and new of rows that changed address (linked
	// anew whatever they are).
	var emails, moved []string
	for i := range rows {
		r := &rows[i]
		key := w.key(r)
		ct, creating := found[key], false
		if ct == nil {
			if w.imp.UpsertKey == "id" && key != "" {
				w.batch.failRow(w.imp.ID, r.Line, []FieldError{{Field: "id", Code: "not_found", Message: "No contact of this organization has this id."}})
				continue
			}
			if bad := w.missing(r); len(bad) > 0 {
				w.batch.failRow(w.imp.ID, r.Line, bad)
				continue
			}
			creating = true
			ct = &Contact{ID: NewID(), OrgID: w.imp.OrgID, Type: ContactPerson, CreatedBy: w.imp.CreatedBy, CreatedAt: w.createdAt(r), UpdatedAt: w.now}
		}
		before := *ct
		fields, bad, err := w.fields(r, ct.Fields, creating)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		touched := setCell(&ct.Name, r, "name")
		touched = setCell(&ct.Email, r, "email") || touched
		if setCell(&ct.Phone, r, "phone") {
			ct.SetPhone(ct.Phone)
			touched = true
		}
		touched = setCell(&ct.Company, r, "company") || touched
		touched = setCell(&ct.Designation, r, "designation") || touched
		touched = setCell(&ct.Type, r, "type") || touched
		touched = setCell(&ct.Notes, r, "notes") || touched
		touched = !fields.Equal(ct.Fields) || touched
		ct.Fields = fields
		switch {
		case creating:
			created = append(created, ct)
			w.batch.Progress.Created++
			if key != "" {
				found[key] = ct
			}
		case !touched:
			w.batch.Progress.Skipped++
			continue
		case slices.Contains(created, ct):
			w.batch.Progress.Updated++
		default:
			ct.UpdatedAt = w.now
			changed = append(changed, ct)
			w.batch.Progress.Updated++
		}
		if before.Email != ct.Email {
			emails = append(emails, ct.Email)
			if !creating {
				moved = append(moved, before.Email, ct.Email)
			}
		}
	}
	if len(created) > 0 {
		if err := w.tx.CreateInBatches(created, importInsertBatch).Error; err != nil {
			return err
		}
	}
	for _, ct := range changed {
		if err := w.tx.Select("*").Omit("customer_id").Updates(ct).Error; err != nil {
			return err
		}
	}
	if err := LinkPeopleOf(w.tx, w.imp.OrgID, "contacts", emails...); err != nil {
		return err
	}
	return LinkPeople(w.tx, w.imp.OrgID, moved...)
}

func keyOfContact(ct *Contact, key string) string {
	if key == "id" {
		return ct.ID
	}
	return ct.Email
}

func writeCustomers(w *importWriter, rows []ImportRow) error {
	// Every row's e-mail is looked up: customers' e-mails are unique in a
	// workspace, so a create of one that exists fails, and an upsert by
	// id must not take another customer's e-mail.
	found := map[string]*Customer{}
	byEmail := map[string]*Customer{}
	lookup := valuesOf(rows, "email")
	var existing []Customer
	q := w.tx.Where("org_id = ? AND email IN ?", w.imp.OrgID, lookup)
	if w.imp.UpsertKey == "id" {
		q = w.tx.Where("org_id = ? AND (email IN ? OR id IN ?)", w.imp.OrgID, lookup, w.keys(rows))
	}
	if err := q.Find(&existing).Error; err != nil {
		return err
	}
	for i := range existing {
		byEmail[existing[i].Email] = &existing[i]
		found[keyOfCustomer(&existing[i], w.imp.UpsertKey)] = &existing[i]
	}
	var created, changed []*Customer
	var emails, moved []string
	for i := range rows {
		r := &rows[i]
		key := w.key(r)
		c, creating := found[key], false
		if key == "" {
			c = nil
		}
		if e := r.Values["email"]; e != "" && byEmail[e] != nil && byEmail[e] != c {
			w.batch.failRow(w.imp.ID, r.Line, []FieldError{{Field: "email", Code: "email_taken", Message: "Another customer of this workspace has this e-mail address."}})
			continue
		}
		if c == nil {
			if w.imp.UpsertKey == "id" && key != "" {
				w.batch.failRow(w.imp.ID, r.Line, []FieldError{{Field: "id", Code: "not_found", Message: "No customer of this workspace has this id."}})
				continue
			}
			if bad := w.missing(r); len(bad) > 0 {
				w.batch.failRow(w.imp.ID, r.Line, bad)
				continue
			}
			creating = true
			c = &Customer{ID: NewID(), OrgID: w.imp.OrgID, CreatedAt: w.createdAt(r), UpdatedAt: w.now}
		}
		before := *c
		fields, bad, err := w.fields(r, c.Fields, creating)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		touched := setCell(&c.Name, r, "name")
		touched = setCell(&c.Email, r, "email") || touched
		touched = setCell(&c.Phone, r, "phone") || touched
		touched = setCell(&c.Company, r, "company") || touched
		touched = setCell(&c.Notes, r, "notes") || touched
		touched = !fields.Equal(c.Fields) || touched
		c.Fields = fields
		switch {
		case creating:
			created = append(created, c)
			w.batch.Progress.Created++
		case !touched:
			w.batch.Progress.Skipped++
			continue
		case slices.Contains(created, c):
			w.batch.Progress.Updated++
		default:
			c.UpdatedAt = w.now
			changed = append(changed, c)
			w.batch.Progress.Updated++
		}
		if before.Email != "" {
			delete(byEmail, before.Email)
		}
		byEmail[c.Email] = c
		found[keyOfCustomer(c, w.imp.UpsertKey)] = c
		if before.Email != c.Email {
			emails = append(emails, c.Email)
			if !creating {
				moved = append(moved, before.Email, c.Email)
			}
		}
	}
	if len(created) > 0 {
		if err := w.tx.CreateInBatches(created, importInsertBatch).Error; err != nil {
			return err
		}
	}
	for _, c := range changed {
		if err := w.tx.Select("*").Omit("contact_id").Updates(c).Error; err != nil {
			return err
		}
	}
	if err := LinkPeopleOf(w.tx, w.imp.OrgID, "customers", emails...); err != nil {
		return err
	}
	return LinkPeople(w.tx, w.imp.OrgID, moved...)
}

func keyOfCustomer(c *Customer, key string) string {
	if key == "id" {
		return c.ID
	}
	return c.Email
}
