package models

import (
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// Customer is someone who asks for help; unique by e-mail per workspace.
type Customer struct {
	ID      string `gorm:"primaryKey"`
	OrgID   string
	Name    string
	Email   string
	Phone   string
	Company string
	Notes   string
	// ContactID is the oldest CRM contact with the same e-mail: the same
	// person (LinkPeople).
	ContactID *string
	// Fields are the custom fields' values (CustomField), by key.
	Fields    FieldValues
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TicketCounter numbers an organization's tickets on SQLite (PostgreSQL
// numbers them from a sequence, nextTicketNumber) and counts, in Month and
// MonthCount, the month's tickets of a limited plan (takeMonthlyTicket).
type TicketCounter struct {
	OrgID      string `gorm:"primaryKey"`
	LastNumber int
	Month      string
	MonthCount int
	UpdatedAt  time.Time
}

// Ticket states, priorities and channels (DESIGN §7).
const (
	TicketNew     = "new"
	TicketOpen    = "open"
	TicketPending = "pending"
	TicketOnHold  = "on_hold"
	TicketSolved  = "solved"
	TicketClosed  = "closed"
)

var (
	TicketStatuses   = []string{TicketNew, TicketOpen, TicketPending, TicketOnHold, TicketSolved, TicketClosed}
	TicketPriorities = []string{"low", "normal", "high", "urgent"}
	TicketChannels   = []string{"email", "web", "chat", "phone", "api", "portal", "sms", "whatsapp", "other"}
)

// FirstTicketNumber is the number of an organization's first ticket (#1001).
const FirstTicketNumber = 1001

// ticketMoves: any open state moves among open/pending/on_hold/solved;
// nothing returns to new; closed is final and set only by the auto-close
// timer.
var ticketMoves = map[string][]string{
	TicketNew:     {TicketOpen, TicketPending, TicketOnHold, TicketSolved},
	TicketOpen:    {TicketPending, TicketOnHold, TicketSolved},
	TicketPending: {TicketOpen, TicketOnHold, TicketSolved},
	TicketOnHold:  {TicketOpen, TicketPending, TicketSolved},
	TicketSolved:  {TicketOpen, TicketPending, TicketOnHold},
	TicketClosed:  {},
}

// AllowedTicketMoves lists the statuses a ticket in from may move to.
func AllowedTicketMoves(from string) []string { return ticketMoves[from] }

// CheckTicketMove refuses a transition the workflow does not allow, naming
// the allowed ones; solving needs an assignee.
func CheckTicketMove(from, to string, hasAgent bool) error {
	if from == to {
		return nil
	}
	if !slices.Contains(ticketMoves[from], to) {
		allowed := ticketMoves[from]
		if len(allowed) == 0 {
			return Err(ErrConflict, "illegal_status_transition", "A %s ticket is final.", from)
		}
		return Err(ErrConflict, "illegal_status_transition", "A %s ticket can move to: %v.", from, allowed)
	}
	if to == TicketSolved && !hasAgent {
		return Err(ErrConflict, "assignee_required", "Assign the ticket to an agent before solving it.")
	}
	return nil
}

// CustomerReopens tells whether a customer comment reopens a ticket.
func CustomerReopens(status string) bool {
	return status == TicketPending || status == TicketOnHold || status == TicketSolved
}

// Ticket is a support request.
type Ticket struct {
	ID              string `gorm:"primaryKey"`
	OrgID           string
	Number          int
	Subject         string
	Description     string
	Status          string
	Priority        string
	Channel         string
	CustomerID      *string
	RequesterEmail  string
	AgentID         *string
	Tags            string
	FirstResponseAt *time.Time
	SolvedAt        *time.Time
	ClosedAt        *time.Time
	SolveCount      int
	// FollowsTicketID is the closed ticket an e-mail reply opened this one
	// to follow.
	FollowsTicketID *string
	// SLAState is the ticket's SLA clocks as JSON (TicketSLA; nil: no
	// policy applied when it was opened); the columns after it are what
	// the lists filter on, kept from it (planSLA).
	SLAState      *string    `gorm:"column:sla_state"`
	SLABreached   bool       `gorm:"column:sla_breached"`
	SLANextDueAt  *time.Time `gorm:"column:sla_next_due_at"`
	SLANextWarnAt *time.Time `gorm:"column:sla_next_warn_at"`
	CreatedAt     time.Time
	// Fields are the custom fields' values (CustomField), by key.
	Fields    FieldValues
	UpdatedAt time.Time
}

// Comment authors.
const (
	AuthorAgent    = "agent"
	AuthorCustomer = "customer"
)

// TicketComment is a reply or an internal note on a ticket.
type TicketComment struct {
	ID               string `gorm:"primaryKey"`
	OrgID            string
	TicketID         string
	AuthorType       string
	AuthorMemberID   *string
	AuthorCustomerID *string
	Body             string
	Public           bool
	CreatedAt        time.Time
}

// CustomerEvent is one entry of a customer's activity feed.
type CustomerEvent struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	CustomerID string
	TicketID   *string
	Type       string
	Summary    string
	Actor      Actor
	CreatedAt  time.Time
}

// Knowledge-base article states.
const (
	ArticleDraft     = "draft"
	ArticlePublished = "published"
)

// KBCategory groups articles.
type KBCategory struct {
	ID          string `gorm:"primaryKey"`
	OrgID       string
	Name        string
	Slug        string
	Description string
	Position    int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TableName keeps the kb_ prefix.
func (KBCategory) TableName() string { return "kb_categories" }

// KBArticle is a help-center article written in Markdown; BodyHTML is its
// sanitised rendering.
type KBArticle struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	CategoryID *string
	Title      string
	Slug       string
	Body       string
	BodyHTML   string `gorm:"column:body_html"`
	// BodyText is the body's plain text (Markdown stripped): what search
	// indexes and snippets are cut from.
	BodyText    string
	Status      string
	Views       int64
	PublishedAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TableName keeps the kb_ prefix.
func (KBArticle) TableName() string { return "kb_articles" }

// PushSubscription is a browser's web-push registration for a member.
type PushSubscription struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	MemberID  string
	Endpoint  string
	P256dh    string `gorm:"column:p256dh"`
	Auth      string
	UserAgent string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// VAPIDKey is the application server key pair for web push.
type VAPIDKey struct {
	ID         string `gorm:"primaryKey"`
	PublicKey  string
	PrivateKey string
	CreatedAt  time.Time
}

// TableName is vapid_keys.
func (VAPIDKey) TableName() string { return "vapid_keys" }

// RecordCustomerEvent appends to a customer's activity feed; call it in the
// transaction of the change it describes.
func RecordCustomerEvent(tx *gorm.DB, orgID, customerID string, ticketID *string, typ, summary string, actor Actor) error {
	ev := NewCustomerEvent(orgID, customerID, ticketID, typ, summary, actor)
	return tx.Create(&ev).Error
}

// NewCustomerEvent is an entry of a customer's activity feed, made now, to
// record with others in one statement (RecordCustomerEvent records one).
func NewCustomerEvent(orgID, customerID string, ticketID *string, typ, summary string, actor Actor) CustomerEvent {
	return CustomerEvent{ID: NewID(), OrgID: orgID, CustomerID: customerID, TicketID: ticketID,
		Type: typ, Summary: summary, Actor: actor, CreatedAt: Now()}
}

// Itoa formats a ticket number.
func Itoa(n int) string { return strconv.Itoa(n) }

// DefaultTicketAutoClose is how long a solved ticket waits before it is
// closed, unless the API is configured otherwise.
const DefaultTicketAutoClose = 4 * 24 * time.Hour

// TicketAutoCloseInput is the input of a solved ticket's auto-close timer
// (workflows.TicketAutoClose): the ticket and the generation of its solved
// state (how many times it has been solved).
type TicketAutoCloseInput struct {
	TicketID   string        `json:"ticketId"`
	SolveCount int           `json:"solveCount"`
	After      time.Duration `json:"after"`
}

// TicketAutoCloseCancelInput names the timer to cancel
// (workflows.TicketAutoCloseCancel): the ticket and the generation of the
// solved state it left.
type TicketAutoCloseCancelInput struct {
	TicketID   string `json:"ticketId"`
	SolveCount int    `json:"solveCount"`
}
