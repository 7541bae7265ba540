package models

import (
	"time"

	"gorm.io/gorm"
)

// A person's timeline (issue 47): everything about one person — a CRM
// contact and the Helpdesk customer who is the same person (LinkPeople) —
// newest first, in one keyset-paginated SQL union of its sources.

// Person is the contact and the customer of one person ("" for the side
// there is none of).
type Person struct {
	ContactID, CustomerID string
}

// TimelineItem is one thing that happened to a person. Kind is what, as
// PersonTimeline's sources name it (deal.created, comment.internal,
// email.received, time.logged, ai.summary…); ObjectType and ObjectID name
// the record it is about (a comment's, an e-mail's or a time entry's
// ticket).
type TimelineItem struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	At         time.Time `json:"at" gorm:"column:created_at"`
	Actor      string    `json:"actor"`
	Summary    string    `json:"summary"`
	ObjectType string    `json:"objectType"`
	ObjectID   string    `json:"objectId"`
}

// TimelineScope narrows what a caller sees: AssignedTo, when set, is the
// member whose deals, tasks and leads alone an AGENT of the CRM sees.
type TimelineScope struct {
	AssignedTo string
}

// PersonTimeline is the query of p's timeline in orgID, a union whose
// rows are TimelineItems, to be paginated newest first on created_at and
// id (web.Paginate). Each source is read through its own index: deals,
// tasks and leads by contact, tickets by customer, comments, e-mails and
// time entries by their tickets, AI summaries by the documents of the
// person's records.
func PersonTimeline(db *gorm.DB, orgID string, p Person, scope TimelineScope) *gorm.DB {
	var parts []any
	add := func(q *gorm.DB) { parts = append(parts, q) }
	assigned := func(q *gorm.DB, column string) *gorm.DB {
		if scope.AssignedTo == "" {
			return q
		}
		return q.Where(column+" = ?", scope.AssignedTo)
	}
	if p.ContactID != "" {
		add(assigned(db.Table("deals").Select(`CAST(id AS text) AS id, 'deal.created' AS kind, created_at, created_by AS actor,
			title AS summary, 'deal' AS object_type, CAST(id AS text) AS object_id`).Where("org_id = ? AND contact_id = ?", orgID, p.ContactID), "assigned_to_id"))
		add(assigned(db.Table("deal_stage_changes AS s").Joins("JOIN deals d ON d.id = s.deal_id").
			Select(`CAST(s.id AS text) AS id, 'deal.stage_changed' AS kind, s.created_at, s.changed_by AS actor,
			d.title || ': ' || s.from_stage || ' → ' || s.to_stage AS summary, 'deal' AS object_type, CAST(d.id AS text) AS object_id`).
			Where("d.org_id = ? AND d.contact_id = ? AND s.from_stage <> ''", orgID, p.ContactID), "d.assigned_to_id"))
		add(assigned(db.Table("tasks").Select(`CAST(id AS text) AS id, 'task.created' AS kind, created_at, created_by AS actor,
			title AS summary, 'task' AS object_type, CAST(id AS text) AS object_id`).Where("org_id = ? AND contact_id = ?", orgID, p.ContactID), "assigned_to_id"))
		add(assigned(db.Table("leads").Select(`CAST(id AS text) AS id, 'lead.created' AS kind, created_at, created_by AS actor,
			name || ' (' || status || ')' AS summary, 'lead' AS object_type, CAST(id AS text) AS object_id`).Where("org_id = ? AND contact_id = ?", orgID, p.ContactID), "assigned_to_id"))
	}
	if p.CustomerID != "" {
		tickets := db.Table("tickets").Select("id").Where("org_id = ? AND customer_id = ?", orgID, p.CustomerID)
		add(db.Table("tickets").Select(`CAST(id AS text) AS id, 'ticket.created' AS kind, created_at, requester_email AS actor,
			'#' || number || ' ' || subject AS summary, 'ticket' AS object_type, CAST(id AS text) AS object_id`).
			Where("org_id = ? AND customer_id = ?", orgID, p.CustomerID))
		add(db.Table("ticket_comments AS c").Select(`CAST(c.id AS text) AS id,
			CASE (SELECT e.direction FROM email_messages e WHERE e.comment_id = c.id LIMIT 1)
			  WHEN 'in' THEN 'email.received' WHEN 'out' THEN 'email.sent'
			  ELSE CASE WHEN c.public THEN 'comment.public' ELSE 'comment.internal' END END AS kind,
			c.created_at, COALESCE(CAST(c.author_member_id AS text), CAST(c.author_customer_id AS text), c.author_type) AS actor,
			c.body AS summary, 'ticket' AS object_type, CAST(c.ticket_id AS text) AS object_id`).
			Where("c.ticket_id IN (?)", tickets))
		add(db.Table("time_entries").Select(`CAST(id AS text) AS id, 'time.logged' AS kind, created_at,
			COALESCE(CAST(member_id AS text), '') AS actor, minutes || ' min: ' || description AS summary, 'ticket' AS object_type,
			CAST(ticket_id AS text) AS object_id`).Where("org_id = ? AND customer_id = ?", orgID, p.CustomerID))
	}
	if sources := summarySources(db, orgID, p); sources != nil {
		add(db.Table("ai_jobs AS j").Joins("JOIN ai_documents d ON d.id = j.document_id").
			Select(`CAST(j.id AS text) AS id, 'ai.summary' AS kind, j.finished_at AS created_at, j.created_by AS actor,
			d.title AS summary, d.source AS object_type, CAST(d.source_id AS text) AS object_id`).
			Where("j.org_id = ? AND j.kind = ? AND j.status = ? AND d.source_id IN (?)", orgID, AIKindSummarize, AIJobSucceeded, sources))
	}
	union := "(?"
	for range parts[1:] {
		union += " UNION ALL ?"
	}
	return db.Table(union+") AS timeline", parts...)
}

// summarySources is the query of the records of p an AI summary may be
// about (its customer, its tickets, its leads), nil when there are none.
func summarySources(db *gorm.DB, orgID string, p Person) *gorm.DB {
	switch {
	case p.ContactID != "" && p.CustomerID != "":
		return db.Raw(`SELECT id FROM customers WHERE id = ? UNION ALL SELECT id FROM tickets WHERE org_id = ? AND customer_id = ?
			UNION ALL SELECT id FROM leads WHERE org_id = ? AND contact_id = ?`, p.CustomerID, orgID, p.CustomerID, orgID, p.ContactID)
	case p.CustomerID != "":
		return db.Raw(`SELECT id FROM customers WHERE id = ? UNION ALL SELECT id FROM tickets WHERE org_id = ? AND customer_id = ?`,
			p.CustomerID, orgID, p.CustomerID)
	case p.ContactID != "":
		return db.Raw(`SELECT id FROM leads WHERE org_id = ? AND contact_id = ?`, orgID, p.ContactID)
	}
	return nil
}
