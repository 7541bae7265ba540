package models

import (
	"encoding/json"
	"strings"

	"gorm.io/gorm"
)

// TagsJSON is a ticket's tags as stored: trimmed, lowercased, blanks left
// out, a JSON array.
func TagsJSON(tags []string) string {
	clean := []string{}
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			clean = append(clean, t)
		}
	}
	b, _ := json.Marshal(clean)
	return string(b)
}

// Tickets import as new tickets of the workspace's numbering, each with
// its requester as a customer (found by e-mail, or created and linked to
// the contact of that e-mail) and its description as its first message.
// An imported ticket is history, not new work: it sets off no auto-reply,
// e-mail or webhook, starts no SLA clock (its SLA state is none) and
// takes nothing of the plan's monthly ticket allowance; one imported
// solved or closed was so when it was created.

var ticketImport = ImportObject{
	Name: "tickets", App: "helpdesk", FieldObject: AutomationTicket,
	Columns: []ImportColumn{
		{Field: "subject", Max: 300, Required: true},
		{Field: "description", Max: 20000},
		{Field: "requesterEmail", Max: 254, Required: true, Check: importedEmail, Address: true},
		{Field: "requesterName", Max: 200},
		{Field: "status", Max: 10, Check: oneOf(TicketStatuses...)},
		{Field: "priority", Max: 10, Check: oneOf(TicketPriorities...)},
		{Field: "channel", Max: 10, Check: oneOf(TicketChannels...)},
		{Field: "tags", Max: 1100},
		{Field: "agentId", Max: 36, Check: anID},
		{Field: "createdAt", Max: 40, Check: importedTime},
	},
	Ignored: []string{"id", "workspaceId", "number", "customerId", "firstResponseAt", "solvedAt", "closedAt", "sla", "updatedAt",
		"attachments", "followsTicketId", "allowedStatuses"},
	Aliases:       map[string]string{"email": "requesterEmail"},
	write:         writeTickets,
	ExportColumns: []string{"id", "number", "subject", "description", "status", "priority", "channel", "requesterEmail", "customerId", "agentId", "tags", "createdAt", "updatedAt"},
	Filters:       []string{"status", "priority", "agentId", "customerId", "q"},
	narrow: func(q *gorm.DB, f map[string]string) *gorm.DB {
		q = Equal(Equal(Equal(Equal(q.Model(&Ticket{}), "status", f["status"]), "priority", f["priority"]), "agent_id", f["agentId"]), "customer_id", f["customerId"])
		return Containing(q, f["q"], "subject", "description", "requester_email")
	},
}

// importedTags reads a cell of tags separated by ";" (at most 20, each at
// most 50 characters).
func importedTags(cell string) ([]string, string) {
	var tags []string
	for _, t := range strings.Split(cell, ";") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	for _, t := range tags {
		if len([]rune(t)) > 50 {
			return nil, "Each tag at most 50 characters (tags are separated by ;)."
		}
	}
	if len(tags) > 20 {
		return nil, "At most 20 tags (separated by ;)."
	}
	return tags, ""
}

func writeTickets(w *importWriter, rows []ImportRow) error {
	members, err := w.members(valuesOf(rows, "agentId"))
	if err != nil {
		return err
	}
	var known []Customer
	if err := w.tx.Where("org_id = ? AND email IN ?", w.imp.OrgID, valuesOf(rows, "requesterEmail")).Find(&known).Error; err != nil {
		return err
	}
	customers := map[string]*Customer{}
	for i := range known {
		customers[known[i].Email] = &known[i]
	}
	var newCustomers []*Customer
	var tickets []*Ticket
	var history []CustomerEvent
	for i := range rows {
		r := &rows[i]
		bad := w.missing(r)
		if id := r.Values["agentId"]; id != "" && !members[id] {
			bad = append(bad, FieldError{Field: "agentId", Code: "not_a_member", Message: "Must be the id of a member of this workspace."})
		}
		tags, why := importedTags(r.Values["tags"])
		if why != "" {
			bad = append(bad, FieldError{Field: "tags", Code: "invalid", Message: why})
		}
		fields, fieldProblems, err := w.fields(r, nil, true)
		if err != nil {
			return err
		}
		if bad = append(bad, fieldProblems...); len(bad) > 0 {
			w.batch.failRow(w.imp.ID, r.Line, bad)
			continue
		}
		created := w.createdAt(r)
		t := &Ticket{ID: NewID(), OrgID: w.imp.OrgID, Subject: r.Values["subject"], Description: r.Values["description"], Status: TicketNew,
			Priority: "normal", Channel: "other", RequesterEmail: r.Values["requesterEmail"], Tags: TagsJSON(tags), Fields: fields,
			CreatedAt: created, UpdatedAt: w.now}
		setCell(&t.Status, r, "status")
		setCell(&t.Priority, r, "priority")
		setCell(&t.Channel, r, "channel")
		if id := r.Values["agentId"]; id != "" {
			t.AgentID = &id
		}
		switch t.Status {
		case TicketSolved:
			t.SolvedAt, t.SolveCount = &created, 1
		case TicketClosed:
			t.SolvedAt, t.ClosedAt, t.SolveCount = &created, &created, 1
		}
		cust := customers[t.RequesterEmail]
		if cust == nil {
			c := newCustomerFor(w.imp.OrgID, t.RequesterEmail, r.Values["requesterName"])
			cust = &c
			if cust.Fields, err = FieldDefaults(w.tx, w.imp.OrgID, AutomationCustomer); err != nil {
				return err
			}
			customers[cust.Email] = cust
			newCustomers = append(newCustomers, cust)
			history = append(history, NewCustomerEvent(w.imp.OrgID, cust.ID, nil, "customer_created", "Customer created by an import", w.imp.CreatedBy))
		}
		t.CustomerID = &cust.ID
		if !w.imp.DryRun { // a sequence's numbers are not given back by a rollback
			if t.Number, err = nextTicketNumber(w.tx, w.imp.OrgID, w.now); err != nil {
				return err
			}
		}
		tickets = append(tickets, t)
		history = append(history, NewCustomerEvent(w.imp.OrgID, cust.ID, &t.ID, "ticket_created",
			ticketOpened+Itoa(t.Number)+" imported: "+t.Subject, w.imp.CreatedBy))
		w.batch.Progress.Created++
	}
	if len(newCustomers) > 0 {
		if err := w.tx.CreateInBatches(newCustomers, importInsertBatch).Error; err != nil {
			return err
		}
		var added []string
		for _, c := range newCustomers {
			added = append(added, c.Email)
		}
		if err := LinkPeopleOf(w.tx, w.imp.OrgID, "customers", added...); err != nil {
			return err
		}
	}
	if len(tickets) == 0 {
		return nil
	}
	if err := w.tx.CreateInBatches(tickets, importInsertBatch).Error; err != nil {
		return err
	}
	return w.tx.CreateInBatches(history, importInsertBatch).Error
}
