package models

import (
	"slices"
	"time"
)

// Contact types.
const (
	ContactPerson  = "person"
	ContactCompany = "company"
)

// Contact is a person or company the organization deals with.
type Contact struct {
	ID    string `gorm:"primaryKey"`
	OrgID string
	Name  string
	Email string
	Phone string
	// PhoneE164 is Phone in E.164 ("" when it is no valid number), which
	// the duplicates are found by; SetPhone keeps it.
	PhoneE164   string `gorm:"column:phone_e164"`
	Company     string
	Designation string
	Type        string
	Notes       string
	// CustomerID is the Helpdesk customer with the same e-mail: the same
	// person (LinkPeople).
	CustomerID *string
	// Fields are the custom fields' values (CustomField), by key.
	Fields    FieldValues
	CreatedBy Actor
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SetPhone sets the contact's phone and its E.164 form (PhoneE164): every
// write of a contact's phone goes through it — the routes, the import, a
// lead's conversion, a merge. (Not a GORM hook: the one-statement create,
// database.InsertUnless, takes only models without hooks.)
func (c *Contact) SetPhone(phone string) {
	c.Phone, c.PhoneE164 = phone, NormalizePhone(phone)
}

// Deal stages, in pipeline order, with their win probability (DESIGN §7).
const (
	StageNew         = "NEW"
	StageQualified   = "QUALIFIED"
	StageMeeting     = "MEETING"
	StageProposal    = "PROPOSAL"
	StageNegotiation = "NEGOTIATION"
	StageWon         = "WON"
	StageLost        = "LOST"
)

// DealStages lists the stages in pipeline order.
var DealStages = []string{StageNew, StageQualified, StageMeeting, StageProposal, StageNegotiation, StageWon, StageLost}

// StageProbability is the win probability of a stage.
var StageProbability = map[string]float64{
	StageNew: 0.10, StageQualified: 0.25, StageMeeting: 0.40, StageProposal: 0.60,
	StageNegotiation: 0.80, StageWon: 1, StageLost: 0,
}

// OpenStage tells whether a deal in stage is still in the pipeline.
func OpenStage(stage string) bool { return stage != StageWon && stage != StageLost }

// Deal is one sales opportunity.
type Deal struct {
	ID             string `gorm:"primaryKey"`
	OrgID          string
	Title          string
	Amount         float64
	Currency       string
	Stage          string
	CloseDate      string
	CompanyName    string
	ContactEmail   string
	ContactID      *string
	LeadID         *string
	AssignedToID   *string
	LostReason     string
	CreatedBy      Actor
	StageChangedAt time.Time
	WonAt          *time.Time
	CreatedAt      time.Time
	// Fields are the custom fields' values (CustomField), by key.
	Fields    FieldValues
	UpdatedAt time.Time
}

// DealStageChange records one move of a deal between stages.
type DealStageChange struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	DealID    string
	FromStage string
	ToStage   string
	ChangedBy Actor
	CreatedAt time.Time
}

// CheckStageMove applies the pipeline rules to a move from → to: open
// stages move freely; LOST needs a reason; leaving WON or LOST (reopening)
// is for admins; WON and LOST never switch directly into each other.
func CheckStageMove(from, to string, admin bool, lostReason string) error {
	if from == to {
		return nil
	}
	if !OpenStage(from) {
		if !OpenStage(to) {
			return Err(ErrConflict, "illegal_stage_transition",
				"A %s deal cannot move to %s directly; reopen it to an open stage first.", from, to)
		}
		if !admin {
			return Err(ErrForbidden, "admin_required", "Reopening a %s deal needs the ADMIN role.", from)
		}
	}
	if to == StageLost && lostReason == "" {
		return Invalid(FieldError{Field: "lostReason", Code: "required", Message: "A deal moved to LOST needs a lostReason."})
	}
	return nil
}

// Lead statuses.
const (
	LeadNew         = "NEW"
	LeadContacted   = "CONTACTED"
	LeadQualified   = "QUALIFIED"
	LeadConverted   = "CONVERTED"
	LeadUnqualified = "UNQUALIFIED"
)

// leadMoves lists the statuses a lead may move to by update. CONVERTED is
// reached only through POST /leads/:id/convert, and is final.
var leadMoves = map[string][]string{
	LeadNew:         {LeadContacted, LeadQualified, LeadUnqualified},
	LeadContacted:   {LeadQualified, LeadUnqualified},
	LeadQualified:   {LeadContacted, LeadUnqualified},
	LeadUnqualified: {LeadNew, LeadContacted, LeadQualified},
	LeadConverted:   {},
}

// CheckLeadMove refuses a status change the lifecycle does not allow.
func CheckLeadMove(from, to string) error {
	if from == to || slices.Contains(leadMoves[from], to) {
		return nil
	}
	allowed := leadMoves[from]
	if len(allowed) == 0 {
		return Err(ErrConflict, "illegal_status_transition", "A %s lead is final.", from)
	}
	if to == LeadConverted {
		return Err(ErrConflict, "illegal_status_transition", "Convert a lead with POST /leads/{id}/convert.")
	}
	return Err(ErrConflict, "illegal_status_transition", "A %s lead can move to: %v.", from, allowed)
}

// Lead is a top-of-funnel prospect.
type Lead struct {
	ID             string `gorm:"primaryKey"`
	OrgID          string
	Name           string
	Email          string
	Phone          string
	Company        string
	Value          float64
	Source         string
	Status         string
	Score          int
	Probability    float64
	ScoreFactors   string
	AssignedToID   *string
	ContactID      *string
	DealID         *string
	LastActivityAt *time.Time
	CreatedBy      Actor
	CreatedAt      time.Time
	// Fields are the custom fields' values (CustomField), by key.
	Fields    FieldValues
	UpdatedAt time.Time
}

// Lead activity types.
var LeadActivityTypes = []string{"note", "call", "email", "meeting", "message", "system"}

// LeadActivity is one entry of a lead's timeline.
type LeadActivity struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	LeadID     string
	Type       string
	Body       string
	OccurredAt time.Time
	CreatedBy  Actor
	CreatedAt  time.Time
}

// Lead intake states.
const (
	IntakeReceived  = "received"
	IntakeProcessed = "processed"
	// IntakeRefused: the address was erased on request (AddressErased).
	IntakeRefused = "refused"
)

// IntakePayload is what a web form (or POST /leads) submitted: the JSON
// stored in LeadIntake.Payload, written by the API and read by the intake
// workflow's activities.
type IntakePayload struct {
	Name    string  `json:"name"`
	Email   string  `json:"email"`
	Phone   string  `json:"phone"`
	Company string  `json:"company"`
	Value   float64 `json:"value"`
	Source  string  `json:"source"`
	Channel string  `json:"channel"` // "webhook" or "api"
}

// LeadIntake is one accepted web-form submission, processed by the
// LeadIntake workflow.
type LeadIntake struct {
	ID        string `gorm:"primaryKey"`
	OrgID     string
	DedupeKey string
	LeadID    string
	Payload   string
	Status    string
	Duplicate bool
	// Authenticated is true when the intake came with the organization's
	// crm_ key (or from the authenticated API); only then may it change an
	// existing lead. An anonymous (orgId-only) duplicate is only recorded
	// on the lead's timeline.
	Authenticated bool
	CreatedAt     time.Time
	ProcessedAt   *time.Time
}

// Task priorities and states.
var (
	TaskPriorities = []string{"LOW", "MEDIUM", "HIGH", "URGENT"}
	TaskStatuses   = []string{"OPEN", "DONE"}
)

// Task is a to-do, optionally linked to a lead, deal or contact.
type Task struct {
	ID           string `gorm:"primaryKey"`
	OrgID        string
	Title        string
	Description  string
	DueDate      string
	Priority     string
	Status       string
	AssignedToID *string
	LeadID       *string
	DealID       *string
	ContactID    *string
	CreatedBy    Actor
	CompletedAt  *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Notification is a message to one member (assignment, customer reply…).
type Notification struct {
	ID           string `gorm:"primaryKey"`
	OrgID        string
	MemberID     string
	Type         string
	Title        string
	Body         string
	ResourceType string
	ResourceID   string
	ReadAt       *time.Time
	CreatedAt    time.Time
}

// AssignmentCursor remembers the last member a round-robin gave work to.
type AssignmentCursor struct {
	OrgID        string `gorm:"primaryKey"`
	Kind         string `gorm:"primaryKey"`
	LastMemberID *string
	UpdatedAt    time.Time
}
