package models

import "gorm.io/gorm"

// Task states and the default priority.
const (
	TaskOpen            = "OPEN"
	TaskDone            = "DONE"
	TaskDefaultPriority = "MEDIUM"
)

// Tasks import as new tasks only; what each is about (a lead, a deal, a
// contact) and who it is assigned to must be the organization's. A task
// imported DONE was completed when it was created.

var taskImport = ImportObject{
	Name: "tasks", App: "crm",
	Columns: []ImportColumn{
		{Field: "title", Max: 300, Required: true},
		{Field: "description", Max: 10000},
		{Field: "dueDate", Max: 10, Check: importedDate},
		{Field: "priority", Max: 10, Check: oneOf("LOW", "MEDIUM", "HIGH", "URGENT")},
		{Field: "status", Max: 10, Check: oneOf(TaskOpen, TaskDone)},
		{Field: "assignedToId", Max: 36, Check: anID},
		{Field: "leadId", Max: 36, Check: anID},
		{Field: "dealId", Max: 36, Check: anID},
		{Field: "contactId", Max: 36, Check: anID},
		{Field: "createdAt", Max: 40, Check: importedTime},
	},
	Ignored:       []string{"id", "orgId", "completedAt", "updatedAt"},
	write:         writeTasks,
	ExportColumns: []string{"id", "title", "description", "dueDate", "priority", "status", "assignedToId", "leadId", "dealId", "contactId", "completedAt", "createdAt", "updatedAt"},
	Filters:       []string{"status", "priority", "assignedToId"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		return Equal(Equal(Equal(q.Model(&Task{}), "status", f["status"]), "priority", f["priority"]), "assigned_to_id", f["assignedToId"])
	},
}

// taskRefs are a task's references: its column, the table it names, and
// the refusal of one that is not the organization's.
var taskRefs = []struct {
	field, table string
	refused      FieldError
}{
	{"assignedToId", "members", FieldError{Field: "assignedToId", Code: "not_a_member", Message: "Must be the id of a member of this organization."}},
	{"leadId", "leads", FieldError{Field: "leadId", Code: "not_found", Message: "Must be the id of a lead of this organization."}},
	{"dealId", "deals", FieldError{Field: "dealId", Code: "not_found", Message: "Must be the id of a deal of this organization."}},
	{"contactId", "contacts", FieldError{Field: "contactId", Code: "not_found", Message: "Must be the id of a contact of this organization."}},
}

func writeTasks(w *importWriter, rows []ImportRow) error {
	found := map[string]map[string]bool{}
	for _, ref := range taskRefs {
		var ok map[string]bool
		var err error
		if ref.table == "members" {
			ok, err = w.members(valuesOf(rows, ref.field))
		} else {
			ok, err = existing(w.tx, ref.table, w.imp.OrgID, valuesOf(rows, ref.field))
		}
		if err != nil {
			return err
		}
		found[ref.field] = ok
	}
	var tasks []*Task
	for i := range rows {
		r := &rows[i]
		bad := w.missing(r)
		t := &Task{ID: NewID(), OrgID: w.imp.OrgID, Title: r.Values["title"], Priority: TaskDefaultPriority, Status: TaskOpen,
			CreatedBy: w.imp.CreatedBy, CreatedAt: w.createdAt(r), UpdatedAt: w.now}
		for _, ref := range taskRefs {
			id := r.Values[ref.field]
			if id == "" {
				continue
			}
			if !found[ref.field][id] {
				bad = append(bad, ref.refused)
			}
			switch ref.field {
			case "assignedToId":
				t.AssignedToID = &id
			case "leadId":
				t.LeadID = &id
			case "dealId":
				t.DealID = &id
			case "contactId":
				t.ContactID = &id
			}
		}
		if len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		setCell(&t.Description, r, "description")
		setCell(&t.DueDate, r, "dueDate")
		setCell(&t.Priority, r, "priority")
		setCell(&t.Status, r, "status")
		if t.Status == TaskDone {
			done := t.CreatedAt
			t.CompletedAt = &done
		}
		tasks = append(tasks, t)
		w.batch.Progress.Created++
	}
	if len(tasks) == 0 {
		return nil
	}
	return w.tx.CreateInBatches(tasks, importInsertBatch).Error
}
