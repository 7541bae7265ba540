package views

import (
	"encoding/json"
	"time"

	"github.com/business-suite/suite/models"
)

// Ticket is a ticket as the Helpdesk shows it.
type Ticket struct {
	ID              string   `json:"id"`
	WorkspaceID     string   `json:"workspaceId"`
	Number          int      `json:"number"`
	Subject         string   `json:"subject"`
	Description     string   `json:"description"`
	Status          string   `json:"status"`
	Priority        string   `json:"priority"`
	Channel         string   `json:"channel"`
	Email           string   `json:"email"`
	CustomerID      *string  `json:"customerId"`
	AgentID         *string  `json:"agentId"`
	Tags            []string `json:"tags"`
	AllowedStatuses []string `json:"allowedStatuses"`
	// FollowsTicketID is the closed ticket an e-mail reply opened this one
	// to follow.
	FollowsTicketID *string    `json:"followsTicketId"`
	FirstResponseAt *time.Time `json:"firstResponseAt"`
	SolvedAt        *time.Time `json:"solvedAt"`
	ClosedAt        *time.Time `json:"closedAt"`
	// SLA is null when no SLA policy applied when the ticket was opened.
	SLA       *TicketSLA `json:"sla"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	// Fields are the custom fields' values by key ({} when none).
	Fields map[string]any `json:"fields"`
}

// TicketSLA is a ticket's SLA as the Helpdesk shows it: the due times of
// its running targets (null: met, none, or paused), its breaches.
type TicketSLA struct {
	PolicyVersion      int         `json:"policyVersion"`
	FirstResponseDueAt *time.Time  `json:"firstResponseDueAt"`
	NextResponseDueAt  *time.Time  `json:"nextResponseDueAt"`
	ResolutionDueAt    *time.Time  `json:"resolutionDueAt"`
	FirstRespondedAt   *time.Time  `json:"firstRespondedAt"`
	Paused             bool        `json:"paused"`
	Breaches           []SLABreach `json:"breaches"`
}

type SLABreach struct {
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
}

// toTicketSLA is t's SLA view (nil: none; a state that cannot be read
// shows as none, and is the SLA workflow's error to report).
func toTicketSLA(t *models.Ticket) *TicketSLA {
	s, err := models.SLAOf(t)
	if err != nil || s == nil {
		return nil
	}
	out := &TicketSLA{PolicyVersion: s.PolicyVersion, FirstRespondedAt: utcTime(s.FirstRespondedAt), Paused: s.Paused(),
		Breaches: make([]SLABreach, 0, len(s.Breaches))}
	due := map[string]**time.Time{models.SLAFirstResponse: &out.FirstResponseDueAt, models.SLANextResponse: &out.NextResponseDueAt,
		models.SLAResolution: &out.ResolutionDueAt}
	for _, k := range s.Clocks {
		if field, ok := due[k.Kind]; ok {
			*field = utcTime(k.DueAt)
		}
	}
	for _, b := range s.Breaches {
		out.Breaches = append(out.Breaches, SLABreach{Kind: b.Kind, At: b.At.UTC()})
	}
	return out
}

// ToTicket is t as the Helpdesk shows it.
func ToTicket(t *models.Ticket) Ticket {
	tags := []string{}
	_ = json.Unmarshal([]byte(t.Tags), &tags)
	allowed := []string{}
	for _, st := range models.AllowedTicketMoves(t.Status) {
		if st != models.TicketSolved || t.AgentID != nil {
			allowed = append(allowed, st)
		}
	}
	return Ticket{ID: t.ID, WorkspaceID: t.OrgID, Number: t.Number, Subject: t.Subject, Description: t.Description,
		Status: t.Status, Priority: t.Priority, Channel: t.Channel, Email: t.RequesterEmail, CustomerID: t.CustomerID,
		AgentID: t.AgentID, Tags: tags, AllowedStatuses: allowed, FollowsTicketID: t.FollowsTicketID, FirstResponseAt: t.FirstResponseAt,
		SolvedAt: t.SolvedAt, ClosedAt: t.ClosedAt, SLA: toTicketSLA(t), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Fields: t.Fields.Clone()}
}

// Customer is a customer as the Helpdesk shows it.
type Customer struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspaceId"`
	Name        string `json:"name"`
	Email       string `json:"email"`
	Phone       string `json:"phone"`
	Company     string `json:"company"`
	Notes       string `json:"notes"`
	// ContactID is the CRM contact with the same e-mail (the oldest, when
	// there are several): the same person (null when there is none).
	ContactID *string   `json:"contactId"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Fields are the custom fields' values by key ({} when none).
	Fields map[string]any `json:"fields"`
}

// ToCustomer is c as the Helpdesk shows it.
func ToCustomer(c *models.Customer) Customer {
	return Customer{ID: c.ID, WorkspaceID: c.OrgID, Name: c.Name, Email: c.Email, Phone: c.Phone,
		Company: c.Company, Notes: c.Notes, ContactID: c.ContactID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Fields: c.Fields.Clone()}
}

// Comment is a ticket comment as the Helpdesk shows it.
type Comment struct {
	ID               string    `json:"id"`
	TicketID         string    `json:"ticketId"`
	AuthorType       string    `json:"authorType"`
	AuthorMemberID   *string   `json:"authorMemberId"`
	AuthorCustomerID *string   `json:"authorCustomerId"`
	Body             string    `json:"body"`
	Public           bool      `json:"public"`
	CreatedAt        time.Time `json:"createdAt"`
	// Delivery is the e-mail of a public agent reply to the requester (null:
	// not e-mailed).
	Delivery *Delivery `json:"delivery"`
	// Attachments are the files that came with a reply by e-mail.
	Attachments []Attachment `json:"attachments"`
}

// Delivery is the e-mail of a comment sent to the requester.
type Delivery struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Attachment is a file that came by e-mail.
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
}

// Comments is the view of comments, given the e-mails that sent them
// (models.EmailsSentForComments) and the files that came with them
// (models.AttachmentsOfComments).
func Comments(sent []models.EmailMessage, files []models.TicketAttachment) func(*models.TicketComment) Comment {
	deliveries := map[string]*Delivery{}
	for _, m := range sent {
		deliveries[*m.CommentID] = &Delivery{Status: m.Status, Error: m.Error}
	}
	attachments := map[string][]Attachment{}
	for _, f := range files {
		attachments[*f.CommentID] = append(attachments[*f.CommentID], Attachment{ID: f.ID, Filename: f.Filename,
			ContentType: f.ContentType, Size: f.Size})
	}
	return func(cm *models.TicketComment) Comment {
		out := Comment{ID: cm.ID, TicketID: cm.TicketID, AuthorType: cm.AuthorType, AuthorMemberID: cm.AuthorMemberID,
			AuthorCustomerID: cm.AuthorCustomerID, Body: cm.Body, Public: cm.Public, CreatedAt: cm.CreatedAt,
			Delivery: deliveries[cm.ID], Attachments: attachments[cm.ID]}
		if out.Attachments == nil {
			out.Attachments = []Attachment{}
		}
		return out
	}
}

// ReceivedEmail is an inbound message as the ticket.email_received event
// shows it (and a rule sees it, under "message").
type ReceivedEmail struct {
	// ID is the inbound message's id (GET /helpdesk/inbound/email/{id}).
	ID        string    `json:"id"`
	MessageID string    `json:"messageId"`
	From      string    `json:"from"`
	Name      string    `json:"name"`
	Subject   string    `json:"subject"`
	Via       string    `json:"via"`
	TicketID  *string   `json:"ticketId"`
	CommentID *string   `json:"commentId"`
	At        time.Time `json:"receivedAt"`
}

// InboundEmail is a received message as the Helpdesk lists it (and the
// email.rejected event shows it): what became of it, never its content.
type InboundEmail struct {
	ID        string `json:"id"`
	MessageID string `json:"messageId"`
	// From is the envelope's sender ("" for a bounce, and once forgotten).
	From        string     `json:"from"`
	Subject     string     `json:"subject"`
	Via         string     `json:"via"`
	Size        int        `json:"size"`
	Status      string     `json:"status"`
	Reason      string     `json:"reason"`
	TicketID    *string    `json:"ticketId"`
	CommentID   *string    `json:"commentId"`
	ReceivedAt  time.Time  `json:"receivedAt"`
	ProcessedAt *time.Time `json:"processedAt"`
}

// ToInboundEmail is m's view.
func ToInboundEmail(m *models.InboundEmail) InboundEmail {
	return InboundEmail{ID: m.ID, MessageID: m.MessageID, From: m.MailFrom, Subject: m.Subject, Via: m.Via, Size: m.Size,
		Status: m.Status, Reason: m.Reason, TicketID: m.TicketID, CommentID: m.CommentID, ReceivedAt: m.ReceivedAt, ProcessedAt: m.ProcessedAt}
}

// ToReceivedEmail is the message m, parsed as p, as the event shows it.
func ToReceivedEmail(m *models.InboundEmail, p *models.ParsedEmail) ReceivedEmail {
	return ReceivedEmail{ID: m.ID, MessageID: m.MessageID, From: p.From, Name: p.Name, Subject: p.Subject, Via: m.Via,
		TicketID: m.TicketID, CommentID: m.CommentID, At: m.ReceivedAt}
}

// Article is a knowledge-base article as the Helpdesk shows it.
type Article struct {
	ID          string     `json:"id"`
	WorkspaceID string     `json:"workspaceId"`
	CategoryID  *string    `json:"categoryId"`
	Title       string     `json:"title"`
	Slug        string     `json:"slug"`
	Body        string     `json:"body"`
	BodyHTML    string     `json:"bodyHtml"`
	Status      string     `json:"status"`
	Views       int64      `json:"views"`
	PublishedAt *time.Time `json:"publishedAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
}

// ToArticle is a as the Helpdesk shows it.
func ToArticle(a *models.KBArticle) Article {
	return Article{ID: a.ID, WorkspaceID: a.OrgID, CategoryID: a.CategoryID, Title: a.Title, Slug: a.Slug,
		Body: a.Body, BodyHTML: a.BodyHTML, Status: a.Status, Views: a.Views, PublishedAt: a.PublishedAt,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}
