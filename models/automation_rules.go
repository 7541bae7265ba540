package models

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// An automation rule's definition — what it reacts to, the steps it takes
// — and its validation; its conditions are in automation_conditions.go,
// its durations and templates in automation_text.go. Everything here is
// pure: the matching in a change's transaction (models/record), the run's
// workflow and its activities all call it.

// The objects a rule can be about.
const (
	AutomationTicket   = "ticket"
	AutomationLead     = "lead"
	AutomationDeal     = "deal"
	AutomationContact  = "contact"
	AutomationCustomer = "customer"
)

// automationTriggers are, for each object, the names a rule's "on" takes
// and the event type each stands for: a rule reacts to the same changes
// that webhook endpoints receive.
var automationTriggers = map[string]map[string]string{
	AutomationTicket: {
		"created": EventTicketCreated, "updated": EventTicketUpdated, "status_changed": EventTicketStatusChanged,
		"assigned": EventTicketAssigned, "comment.created": EventTicketCommentCreated,
		"sla.warning": EventTicketSLAWarning, "sla.breached": EventTicketSLABreached, "email.received": EventTicketEmailReceived,
	},
	AutomationLead: {
		"created": EventLeadCreated, "scored": EventLeadScored, "updated": EventLeadUpdated, "converted": EventLeadConverted,
	},
	AutomationDeal: {
		"created": EventDealCreated, "updated": EventDealUpdated, "stage_changed": EventDealStageChanged,
		"won": EventDealWon, "lost": EventDealLost,
	},
	AutomationContact:  {"created": EventContactCreated, "updated": EventContactUpdated},
	AutomationCustomer: {"created": EventCustomerCreated, "updated": EventCustomerUpdated},
}

// AutomationObjects are the objects a rule can be about.
var AutomationObjects = []string{AutomationTicket, AutomationLead, AutomationDeal, AutomationContact, AutomationCustomer}

// AutomationTrigger is the object and the trigger name of an event type
// (ok false: no rule reacts to it).
func AutomationTrigger(eventType string) (object, trigger string, ok bool) {
	for object, triggers := range automationTriggers {
		for name, typ := range triggers {
			if typ == eventType {
				return object, name, true
			}
		}
	}
	return "", "", false
}

// AutomationTriggers are the trigger names of object, sorted.
func AutomationTriggers(object string) []string {
	return slices.Sorted(maps.Keys(automationTriggers[object]))
}

// Refire modes: a rule runs once per object, or on every match (a run
// still going starts over instead of a second one starting).
const (
	RefireOnce       = "once"
	RefireEveryMatch = "every_match"
)

// The steps a rule takes.
const (
	StepSet        = "set"
	StepAddTags    = "add_tags"
	StepRemoveTags = "remove_tags"
	StepComment    = "comment"
	StepNotify     = "notify"
	StepWebhook    = "webhook"
	StepDelay      = "delay"
	StepWaitFor    = "wait_for"
	StepCreateTask = "create_task"
	StepSummarize  = "ai_summarize"
)

// AutomationActions are every step's action, for the error that names
// them.
var AutomationActions = []string{StepSet, StepAddTags, StepRemoveTags, StepComment, StepNotify, StepWebhook, StepDelay, StepWaitFor,
	StepCreateTask, StepSummarize}

// The objects a create_task step links its task to (a task belongs to a
// deal, a lead or a contact), and those an ai_summarize step summarizes
// (the records an AI document may reference).
var (
	taskObjects    = []string{AutomationDeal, AutomationLead, AutomationContact}
	summaryObjects = []string{AutomationTicket, AutomationLead, AutomationCustomer}
)

// AutomationStep is one step of a rule; which fields it takes depends on
// its action (docs/openapi.yaml, AutomationStep).
type AutomationStep struct {
	Action string `json:"action"`
	// set: the field and its value ("round_robin" for agentId).
	Field string `json:"field,omitempty"`
	// set's value; add_tags and remove_tags: a list of tags.
	Value any `json:"value,omitempty"`
	// delay: an ISO 8601 duration, counted in the workspace's SLA
	// business hours when BusinessHours is set.
	Duration      string `json:"duration,omitempty"`
	BusinessHours bool   `json:"businessHours,omitempty"`
	// comment: an internal note unless Public; Body is a template.
	Public bool   `json:"public,omitempty"`
	Body   string `json:"body,omitempty"`
	// notify: admins, members, assignee; Body (optional) a template.
	To string `json:"to,omitempty"`
	// wait_for: a trigger of the rule's object; webhook: the event type
	// sent to endpoints, "automation.<name>".
	Event string      `json:"event,omitempty"`
	Where *Conditions `json:"where,omitempty"`
	// wait_for: how long to wait (ISO 8601), and what happens then:
	// "continue" (the default) or "stop".
	Timeout   string `json:"timeout,omitempty"`
	OnTimeout string `json:"onTimeout,omitempty"`
	// create_task: its Title (a template; Body is its description), its
	// Priority (MEDIUM unless given), when it is due (DueIn, ISO 8601,
	// from the run's step: a date) and whom it goes to (To: the object's
	// assignee, round_robin or a member's id; nobody when empty).
	Title    string `json:"title,omitempty"`
	Priority string `json:"priority,omitempty"`
	DueIn    string `json:"dueIn,omitempty"`
	// ai_summarize: the summary's length (short, medium — the default —
	// or long).
	Length string `json:"length,omitempty"`
}

// The settable fields of each object (set), with the values they take
// (nil: any member id, or round_robin for an assignee). A deal is not set
// LOST by a rule: LOST needs the reason a person gives.
var settable = map[string]map[string][]string{
	AutomationTicket: {
		"status":   {TicketNew, TicketOpen, TicketPending, TicketOnHold, TicketSolved, TicketClosed},
		"priority": {"low", "normal", "high", "urgent"},
		"agentId":  nil,
	},
	AutomationDeal: {
		"stage":        slices.DeleteFunc(slices.Clone(DealStages), func(s string) bool { return s == StageLost }),
		"assignedToId": nil,
	},
	// A lead is converted by POST /leads/{id}/convert, not by a rule.
	AutomationLead: {
		"status":       {LeadNew, LeadContacted, LeadQualified, LeadUnqualified},
		"assignedToId": nil,
	},
}

// MemberFields are the settable fields that name a member.
var MemberFields = []string{"agentId", "assignedToId"}

// Notify recipients.
var notifyTargets = []string{"admins", "members", "assignee"}

// MaxAutomationDelay is the longest delay or wait a step takes.
const MaxAutomationDelay = 366 * 24 * time.Hour

// AutomationDefinition is a rule as the API takes it.
type AutomationDefinition struct {
	Name       string           `json:"name"`
	Active     bool             `json:"active"`
	Position   int              `json:"position"`
	Object     string           `json:"object"`
	On         []string         `json:"on"`
	Conditions Conditions       `json:"conditions"`
	Steps      []AutomationStep `json:"steps"`
	Refire     string           `json:"refire"`
}

// automationSlug is the form of the name in a webhook step's event.
var automationSlug = regexp.MustCompile(`^automation\.[a-z][a-z0-9_]{0,39}$`)

// Validate checks d, naming the JSON path of every problem; maxSteps is
// the plan's limit of steps per rule.
func (d *AutomationDefinition) Validate(maxSteps int) []FieldError {
	var bad []FieldError
	add := func(field, code, format string, args ...any) {
		bad = append(bad, FieldError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(d.Name) == "" || len(d.Name) > 200 {
		add("name", "required", "A name of 1 to 200 characters.")
	}
	triggers, known := automationTriggers[d.Object]
	if !known {
		add("object", "oneof", "One of %s.", strings.Join(AutomationObjects, ", "))
	}
	if d.Refire != RefireOnce && d.Refire != RefireEveryMatch {
		add("refire", "oneof", "One of once, every_match.")
	}
	if len(d.On) == 0 {
		add("on", "required", "At least one trigger.")
	}
	for i, on := range d.On {
		if _, ok := triggers[on]; known && !ok {
			add(fmt.Sprintf("on[%d]", i), "unknown_trigger", "A %s rule reacts to %s.", d.Object, strings.Join(AutomationTriggers(d.Object), ", "))
		}
	}
	bad = append(bad, d.Conditions.validate("conditions", d.Object)...)
	if len(d.Steps) == 0 {
		add("steps", "required", "At least one step.")
	}
	if len(d.Steps) > maxSteps {
		add("steps", "max", "At most %d steps a rule on this plan.", maxSteps)
	}
	for i, s := range d.Steps {
		bad = append(bad, s.validate(fmt.Sprintf("steps[%d]", i), d.Object, triggers)...)
	}
	return bad
}

func (s *AutomationStep) validate(at, object string, triggers map[string]string) []FieldError {
	var bad []FieldError
	add := func(field, code, format string, args ...any) {
		bad = append(bad, FieldError{Field: at + field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	onTicket := func() bool {
		if object != AutomationTicket {
			add(".action", "not_available", "%s acts on tickets only, not on a %s.", s.Action, object)
			return false
		}
		return true
	}
	switch s.Action {
	case StepSet:
		if _, ok := settable[object]; !ok {
			add(".action", "not_available", "set changes tickets, deals and leads (for now); a %s rule takes notify, webhook, delay and wait_for.", object)
			break
		}
		values, ok := settable[object][s.Field]
		switch str, isString := s.Value.(string); {
		case !ok:
			add(".field", "unknown_field", "set takes %s.", strings.Join(slices.Sorted(maps.Keys(settable[object])), ", "))
		case !isString:
			add(".value", "required", "A string value.")
		case values != nil && !slices.Contains(values, str):
			add(".value", "oneof", "One of %s.", strings.Join(values, ", "))
		case values == nil && str != "round_robin" && !ValidID(str):
			add(".value", "member", `A member's id, or "round_robin" over the workspace's agents.`)
		}
	case StepAddTags, StepRemoveTags:
		if !onTicket() {
			break
		}
		tags, ok := s.Value.([]any)
		if !ok || len(tags) == 0 || len(tags) > 20 {
			add(".value", "tags", "A list of 1 to 20 tags.")
		}
		for i, t := range tags {
			if str, ok := t.(string); !ok || strings.TrimSpace(str) == "" || len(str) > 50 {
				add(fmt.Sprintf(".value[%d]", i), "tag", "A tag of 1 to 50 characters.")
			}
		}
	case StepComment:
		if !onTicket() {
			break
		}
		if strings.TrimSpace(s.Body) == "" || len(s.Body) > 10_000 {
			add(".body", "required", "A body of 1 to 10,000 characters.")
		} else if err := CheckTemplate(s.Body, object); err != nil {
			add(".body", "unknown_variable", "%s", err.Error())
		}
	case StepNotify:
		if !slices.Contains(notifyTargets, s.To) {
			add(".to", "oneof", "One of %s.", strings.Join(notifyTargets, ", "))
		}
		if s.To == "assignee" && (object == AutomationContact || object == AutomationCustomer) {
			add(".to", "no_assignee", "A %s has no assignee.", object)
		}
		if len(s.Body) > 1_000 {
			add(".body", "max", "At most 1,000 characters.")
		} else if err := CheckTemplate(s.Body, object); err != nil {
			add(".body", "unknown_variable", "%s", err.Error())
		}
	case StepWebhook:
		if !AutomationEventType(s.Event) {
			add(".event", "event", `"automation." and a name of lowercase letters, digits and underscores ("automation.escalated").`)
		}
	case StepDelay:
		if d, err := ParseISODuration(s.Duration); err != nil {
			add(".duration", "duration", "%s", err.Error())
		} else if d <= 0 || d > MaxAutomationDelay {
			add(".duration", "range", "From a second to a year.")
		}
	case StepWaitFor:
		if _, ok := triggers[s.Event]; !ok {
			add(".event", "unknown_trigger", "A %s rule waits for %s.", object, strings.Join(AutomationTriggers(object), ", "))
		}
		if d, err := ParseISODuration(s.Timeout); err != nil {
			add(".timeout", "duration", "%s", err.Error())
		} else if d <= 0 || d > MaxAutomationDelay {
			add(".timeout", "range", "From a second to a year.")
		}
		if s.OnTimeout != "" && s.OnTimeout != "continue" && s.OnTimeout != "stop" {
			add(".onTimeout", "oneof", "continue (the default) or stop.")
		}
		if s.Where != nil {
			bad = append(bad, s.Where.validate(at+".where", object)...)
		}
	case StepCreateTask:
		s.validateTask(object, add)
	case StepSummarize:
		if !slices.Contains(summaryObjects, object) {
			add(".action", "not_available", "ai_summarize summarizes %s.", strings.Join(summaryObjects, ", "))
		}
		if s.Length != "" && !slices.Contains(AILengths, s.Length) {
			add(".length", "oneof", "One of %s.", strings.Join(AILengths, ", "))
		}
	default:
		add(".action", "unknown_action", "One of %s.", strings.Join(AutomationActions, ", "))
	}
	return bad
}

// validateTask checks a create_task step (the member it names, if any, is
// the caller's to look up).
func (s *AutomationStep) validateTask(object string, add func(field, code, format string, args ...any)) {
	if !slices.Contains(taskObjects, object) {
		add(".action", "not_available", "create_task links a task to a %s.", strings.Join(taskObjects, ", a "))
		return
	}
	switch title := strings.TrimSpace(s.Title); {
	case title == "" || len(title) > 300:
		add(".title", "required", "A title of 1 to 300 characters.")
	default:
		if err := CheckTemplate(s.Title, object); err != nil {
			add(".title", "unknown_variable", "%s", err.Error())
		}
	}
	if len(s.Body) > 10_000 {
		add(".body", "max", "At most 10,000 characters.")
	} else if err := CheckTemplate(s.Body, object); err != nil {
		add(".body", "unknown_variable", "%s", err.Error())
	}
	if s.Priority != "" && !slices.Contains(TaskPriorities, s.Priority) {
		add(".priority", "oneof", "One of %s.", strings.Join(TaskPriorities, ", "))
	}
	if s.DueIn != "" {
		if d, err := ParseISODuration(s.DueIn); err != nil {
			add(".dueIn", "duration", "%s", err.Error())
		} else if d < 0 || d > MaxAutomationDelay {
			add(".dueIn", "range", "From now to a year.")
		}
	}
	switch {
	case s.To == "" || s.To == "round_robin" || (s.To == "assignee" && object != AutomationContact):
	case s.To == "assignee":
		add(".to", "no_assignee", "A contact has no assignee: name a member, or round_robin.")
	case !ValidID(s.To):
		add(".to", "member", `"assignee", "round_robin" or a member's id.`)
	}
}
