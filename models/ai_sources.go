package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// AISourceText is the text assembled from a record of the suite.
type AISourceText struct {
	Title string
	Text  string
}

// aiStamp is how assembled text dates its entries: "[2026-03-02 14:05]",
// in the organization's time zone. The action-item extractor reads these
// headers as the date each entry was written ("by Friday" counts from it).
const aiStamp = "2006-01-02 15:04"

// LoadAISource assembles the text of the record (source, id) of orgID, with
// times in loc: a ticket's subject, description and whole comment thread; a
// lead's fields and activity timeline; a customer's details, tickets and
// interactions; a knowledge-base article. A record of another organization
// is not found.
func LoadAISource(ctx context.Context, db *gorm.DB, orgID, source, id string, loc *time.Location) (*AISourceText, error) {
	notFound := Err(ErrNotFound, "source_not_found", "No %s with that id in this organization.", strings.ReplaceAll(source, "_", " "))
	if !ValidID(id) {
		return nil, notFound
	}
	db = db.WithContext(ctx)
	var (
		out *AISourceText
		err error
	)
	switch source {
	case AISourceTicket:
		out, err = ticketText(db, orgID, id, loc)
	case AISourceLead:
		out, err = leadText(db, orgID, id, loc)
	case AISourceCustomer:
		out, err = customerText(db, orgID, id, loc)
	case AISourceKBArticle:
		out, err = articleText(db, orgID, id)
	default:
		return nil, Invalid(FieldError{Field: "source", Code: "oneof", Message: "Must be one of: ticket, lead, customer, kb_article."})
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, notFound
	}
	return out, err
}

func stamp(t time.Time, loc *time.Location) string { return "[" + t.In(loc).Format(aiStamp) + "]" }

func ticketText(db *gorm.DB, orgID, id string, loc *time.Location) (*AISourceText, error) {
	var t Ticket
	if err := db.Take(&t, "id = ? AND org_id = ?", id, orgID).Error; err != nil {
		return nil, err
	}
	var comments []TicketComment
	if err := db.Where("ticket_id = ? AND org_id = ?", t.ID, orgID).Order("created_at, id").Find(&comments).Error; err != nil {
		return nil, err
	}
	members, err := memberNames(db, orgID)
	if err != nil {
		return nil, err
	}
	customers := map[string]string{}
	ids := []string{}
	if t.CustomerID != nil {
		ids = append(ids, *t.CustomerID)
	}
	for _, c := range comments {
		if c.AuthorCustomerID != nil {
			ids = append(ids, *c.AuthorCustomerID)
		}
	}
	if len(ids) > 0 {
		var cs []Customer
		if err := db.Where("org_id = ? AND id IN ?", orgID, ids).Find(&cs).Error; err != nil {
			return nil, err
		}
		for _, c := range cs {
			customers[c.ID] = personName(c.Name, c.Email)
		}
	}
	requester := t.RequesterEmail
	if t.CustomerID != nil && customers[*t.CustomerID] != "" {
		requester = customers[*t.CustomerID]
	}
	title := fmt.Sprintf("Ticket #%d: %s", t.Number, t.Subject)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nStatus: %s · Priority: %s · Channel: %s", title, t.Status, t.Priority, t.Channel)
	if t.AgentID != nil && members[*t.AgentID] != "" {
		fmt.Fprintf(&b, " · Assignee: %s", members[*t.AgentID])
	}
	fmt.Fprintf(&b, "\n\n%s %s (customer):\n%s\n", stamp(t.CreatedAt, loc), orDefault(requester, "Requester"), strings.TrimSpace(t.Description))
	for _, c := range comments {
		who, role := "Customer", "customer"
		switch {
		case c.AuthorType == AuthorAgent:
			role = "agent"
			who = "Agent"
			if c.AuthorMemberID != nil && members[*c.AuthorMemberID] != "" {
				who = members[*c.AuthorMemberID]
			}
			if !c.Public {
				role = "agent, internal note"
			}
		case c.AuthorCustomerID != nil && customers[*c.AuthorCustomerID] != "":
			who = customers[*c.AuthorCustomerID]
		}
		fmt.Fprintf(&b, "\n%s %s (%s):\n%s\n", stamp(c.CreatedAt, loc), who, role, strings.TrimSpace(c.Body))
	}
	return &AISourceText{Title: title, Text: b.String()}, nil
}

func leadText(db *gorm.DB, orgID, id string, loc *time.Location) (*AISourceText, error) {
	var l Lead
	if err := db.Take(&l, "id = ? AND org_id = ?", id, orgID).Error; err != nil {
		return nil, err
	}
	var acts []LeadActivity
	if err := db.Where("lead_id = ? AND org_id = ?", l.ID, orgID).Order("occurred_at, id").Find(&acts).Error; err != nil {
		return nil, err
	}
	title := "Lead: " + personName(l.Name, l.Email)
	if l.Company != "" {
		title += " (" + l.Company + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nEmail: %s · Phone: %s · Status: %s · Score: %d · Value: %s · Source: %s\n",
		title, orDefault(l.Email, "-"), orDefault(l.Phone, "-"), l.Status, l.Score, formatAmount(l.Value), orDefault(l.Source, "-"))
	fmt.Fprintf(&b, "\n%s Lead created.\n", stamp(l.CreatedAt, loc))
	for _, a := range acts {
		fmt.Fprintf(&b, "\n%s %s:\n%s\n", stamp(a.OccurredAt, loc), a.Type, strings.TrimSpace(a.Body))
	}
	return &AISourceText{Title: title, Text: b.String()}, nil
}

func customerText(db *gorm.DB, orgID, id string, loc *time.Location) (*AISourceText, error) {
	var c Customer
	if err := db.Take(&c, "id = ? AND org_id = ?", id, orgID).Error; err != nil {
		return nil, err
	}
	var tickets []Ticket
	if err := db.Where("customer_id = ? AND org_id = ?", c.ID, orgID).Order("created_at, id").Find(&tickets).Error; err != nil {
		return nil, err
	}
	var events []CustomerEvent
	if err := db.Where("customer_id = ? AND org_id = ?", c.ID, orgID).Order("created_at, id").Find(&events).Error; err != nil {
		return nil, err
	}
	title := "Customer: " + personName(c.Name, c.Email)
	if c.Company != "" {
		title += " (" + c.Company + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nEmail: %s · Phone: %s\n", title, c.Email, orDefault(c.Phone, "-"))
	if n := strings.TrimSpace(c.Notes); n != "" {
		fmt.Fprintf(&b, "Notes: %s\n", n)
	}
	if len(tickets) > 0 {
		b.WriteString("\nTickets:\n")
		for _, t := range tickets {
			fmt.Fprintf(&b, "- #%d %s (%s, %s priority, opened %s)\n", t.Number, t.Subject, t.Status, t.Priority, t.CreatedAt.In(loc).Format(time.DateOnly))
		}
	}
	if len(events) > 0 {
		b.WriteString("\nInteractions:\n")
		for _, e := range events {
			fmt.Fprintf(&b, "%s %s\n", stamp(e.CreatedAt, loc), strings.TrimSpace(e.Summary))
		}
	}
	return &AISourceText{Title: title, Text: b.String()}, nil
}

func articleText(db *gorm.DB, orgID, id string) (*AISourceText, error) {
	var a KBArticle
	if err := db.Take(&a, "id = ? AND org_id = ?", id, orgID).Error; err != nil {
		return nil, err
	}
	return &AISourceText{Title: a.Title, Text: "# " + a.Title + "\n\n" + strings.TrimSpace(a.Body) + "\n"}, nil
}

// memberNames maps an organization's member ids to their names (or
// e-mails), removed members included: they may have written comments.
func memberNames(db *gorm.DB, orgID string) (map[string]string, error) {
	var ms []Member
	if err := db.Select("id", "name", "email").Where("org_id = ?", orgID).Find(&ms).Error; err != nil {
		return nil, err
	}
	names := make(map[string]string, len(ms))
	for _, m := range ms {
		names[m.ID] = personName(m.Name, m.Email)
	}
	return names, nil
}

func personName(name, email string) string {
	if n := strings.TrimSpace(name); n != "" {
		return n
	}
	return email
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func formatAmount(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
