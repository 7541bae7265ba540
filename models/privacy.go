package models

import (
	"gorm.io/gorm"
)

// A person's data (GDPR article 15): everything an organization holds
// about the person of an e-mail address, found from that address — their
// contacts, customer and leads, then what points at those (deals, tasks,
// tickets with their comments, e-mails and files, time, history, AI
// documents and jobs, notifications) and the webhook events whose payload
// names the address. PersonData gathers it; the Export workflow writes it
// as one archive (an export of object PersonExport).

// PersonExport is the object of an export of a person's data.
const PersonExport = "person"

// PersonData is every row of an organization about one person.
type PersonData struct {
	Email          string
	Contacts       []Contact
	Customers      []Customer
	Leads          []Lead
	LeadActivities []LeadActivity
	LeadIntakes    []LeadIntake
	Deals          []Deal
	DealHistory    []DealStageChange
	Tasks          []Task
	Tickets        []Ticket
	Comments       []TicketComment
	Emails         []EmailMessage
	Attachments    []TicketAttachment
	InboundEmails  []InboundEmail
	TimeEntries    []TimeEntry
	CustomerEvents []CustomerEvent
	AIDocuments    []AIDocument
	AIJobs         []AIJob
	Notifications  []Notification
	WebhookEvents  []WebhookEvent
}

// idsOf are the ids of rows.
func idsOf[T any](rows []T, id func(*T) string) []string {
	out := make([]string, 0, len(rows))
	for i := range rows {
		out = append(out, id(&rows[i]))
	}
	return out
}

// GatherPerson reads orgID's data about the person of email (normalized)
// on db.
func GatherPerson(db *gorm.DB, orgID, email string) (*PersonData, error) {
	p := &PersonData{Email: email}
	// in is a condition on column being one of ids (none: false).
	in := func(column string, ids []string) *gorm.DB {
		if len(ids) == 0 {
			return db.Where("1 = 0")
		}
		return db.Where(column+" IN ?", ids)
	}
	q := func() *gorm.DB { return db.Where("org_id = ?", orgID) }
	steps := []func() error{
		func() error { return q().Where("email = ?", email).Order("created_at, id").Find(&p.Contacts).Error },
		func() error { return q().Where("email = ?", email).Find(&p.Customers).Error },
		func() error {
			cond := in("contact_id", idsOf(p.Contacts, func(c *Contact) string { return c.ID }))
			return q().Where(db.Where("email = ?", email).Or(cond)).Order("created_at, id").Find(&p.Leads).Error
		},
		func() error {
			cond := in("lead_id", idsOf(p.Leads, func(l *Lead) string { return l.ID }))
			if err := q().Where(cond).Order("occurred_at, id").Find(&p.LeadActivities).Error; err != nil {
				return err
			}
			// An intake whose lead is gone (merged, deleted) still holds
			// what the form sent: the address as a JSON string.
			named := db.Where(`payload LIKE ? ESCAPE '\'`, LikePattern(`"`+email+`"`))
			return q().Where(db.Where(cond).Or(named)).Order("created_at, id").Find(&p.LeadIntakes).Error
		},
		func() error {
			contacts := in("contact_id", idsOf(p.Contacts, func(c *Contact) string { return c.ID }))
			leads := in("lead_id", idsOf(p.Leads, func(l *Lead) string { return l.ID }))
			if err := q().Where(db.Where("contact_email = ?", email).Or(contacts).Or(leads)).Order("created_at, id").Find(&p.Deals).Error; err != nil {
				return err
			}
			deals := in("deal_id", idsOf(p.Deals, func(d *Deal) string { return d.ID }))
			return q().Where(deals).Order("created_at, id").Find(&p.DealHistory).Error
		},
		func() error {
			contacts := in("contact_id", idsOf(p.Contacts, func(c *Contact) string { return c.ID }))
			leads := in("lead_id", idsOf(p.Leads, func(l *Lead) string { return l.ID }))
			deals := in("deal_id", idsOf(p.Deals, func(d *Deal) string { return d.ID }))
			return q().Where(db.Where(contacts).Or(leads).Or(deals)).Order("created_at, id").Find(&p.Tasks).Error
		},
		func() error {
			customers := in("customer_id", idsOf(p.Customers, func(c *Customer) string { return c.ID }))
			return q().Where(db.Where("requester_email = ?", email).Or(customers)).Order("created_at, id").Find(&p.Tickets).Error
		},
		func() error {
			cond := in("ticket_id", idsOf(p.Tickets, func(t *Ticket) string { return t.ID }))
			if err := q().Where(cond).Order("created_at, id").Find(&p.Comments).Error; err != nil {
				return err
			}
			if err := q().Where(cond).Order("created_at, message_id").Find(&p.Emails).Error; err != nil {
				return err
			}
			return q().Where(cond).Order("created_at, id").Find(&p.Attachments).Error
		},
		func() error {
			// From the address, or a message of their tickets (its envelope
			// sender may be a relay's).
			tickets := in("ticket_id", idsOf(p.Tickets, func(t *Ticket) string { return t.ID }))
			comments := in("comment_id", idsOf(p.Comments, func(c *TicketComment) string { return c.ID }))
			return q().Select("id, org_id, message_id, mail_from, rcpt, via, subject, size, status, received_at").
				Where(db.Where("mail_from = ?", email).Or(tickets).Or(comments)).Order("received_at, id").Find(&p.InboundEmails).Error
		},
		func() error {
			cond := in("customer_id", idsOf(p.Customers, func(c *Customer) string { return c.ID }))
			if err := q().Where(cond).Order("created_at, id").Find(&p.TimeEntries).Error; err != nil {
				return err
			}
			return q().Where(cond).Order("created_at, id").Find(&p.CustomerEvents).Error
		},
		func() error {
			var sources []string
			sources = append(sources, idsOf(p.Tickets, func(t *Ticket) string { return t.ID })...)
			sources = append(sources, idsOf(p.Leads, func(l *Lead) string { return l.ID })...)
			sources = append(sources, idsOf(p.Customers, func(c *Customer) string { return c.ID })...)
			cond := in("source_id", sources)
			if err := q().Where(cond).Order("created_at, id").Find(&p.AIDocuments).Error; err != nil {
				return err
			}
			docs := in("document_id", idsOf(p.AIDocuments, func(d *AIDocument) string { return d.ID }))
			return q().Where(docs).Order("created_at, id").Find(&p.AIJobs).Error
		},
		func() error {
			var resources []string
			for _, ids := range [][]string{
				idsOf(p.Tickets, func(t *Ticket) string { return t.ID }), idsOf(p.Leads, func(l *Lead) string { return l.ID }),
				idsOf(p.Deals, func(d *Deal) string { return d.ID }), idsOf(p.Tasks, func(t *Task) string { return t.ID }),
				idsOf(p.Contacts, func(c *Contact) string { return c.ID }), idsOf(p.Customers, func(c *Customer) string { return c.ID }),
			} {
				resources = append(resources, ids...)
			}
			cond := in("resource_id", resources)
			return q().Where(cond).Order("created_at, id").Find(&p.Notifications).Error
		},
		func() error {
			// The address as a JSON string of the payload, quotes included:
			// not another address that contains it.
			return q().Where(`payload LIKE ? ESCAPE '\'`, LikePattern(`"`+email+`"`)).Order("created_at, id").Find(&p.WebhookEvents).Error
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p, nil
}
