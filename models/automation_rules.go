package models

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// An automation rule's definition — what it reacts to, the conditions it
// checks, the steps it takes — its validation, and the evaluation of its
// conditions against an object as the API shows it (a map of its JSON).
// Everything here is pure: the matching in a change's transaction
// (models/record), the run's workflow and its activities all call it.

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
		"sla.warning": EventTicketSLAWarning, "sla.breached": EventTicketSLABreached,
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

// Condition is one test of an object's field: {field, operator, value}.
type Condition struct {
	Field    string `json:"field"`
	Operator string `json:"operator"`
	Value    any    `json:"value,omitempty"`
}

// Conditions hold when every one of All holds and, if Any is not empty,
// at least one of Any (Zendesk's shape).
type Conditions struct {
	All []Condition `json:"all"`
	Any []Condition `json:"any"`
}

// The operators a condition takes. The change operators look at what the
// event changed; they hold only for the change that set the run off, and
// are not checked again after a delay or a wait.
var (
	valueOperators  = []string{"is", "is_not", "includes", "not_includes", "contains", "starts_with", "ends_with", "less_than", "greater_than", "hours_since"}
	changeOperators = []string{"changed", "changed_to", "changed_from"}
	bareOperators   = []string{"present", "blank", "changed"}
	// ConditionOperators are every operator, for the error that names them.
	ConditionOperators = slices.Concat(valueOperators, []string{"changed", "present", "blank"}, changeOperators[1:])
)

// ConditionResult is whether one condition held (the test endpoint's
// answer, and a run's record of why it stopped).
type ConditionResult struct {
	Group     string `json:"group"` // all | any
	Condition        // the condition itself
	Holds     bool   `json:"holds"`
}

// Evaluate tells whether c holds for subject (the object's JSON as the
// API shows it) after a change whose earlier values are previous (nil
// when there was no change to look at: a re-check after a delay, where
// the change operators are left out), and how each condition came out.
func (c Conditions) Evaluate(subject, previous map[string]any, now time.Time) (bool, []ConditionResult) {
	var results []ConditionResult
	holds := true
	for _, cond := range c.All {
		ok := cond.holds(subject, previous, now)
		results = append(results, ConditionResult{Group: "all", Condition: cond, Holds: ok})
		holds = holds && ok
	}
	anyHolds := len(c.Any) == 0
	for _, cond := range c.Any {
		ok := cond.holds(subject, previous, now)
		results = append(results, ConditionResult{Group: "any", Condition: cond, Holds: ok})
		anyHolds = anyHolds || ok
	}
	return holds && anyHolds, results
}

// holds is one condition's outcome. A change operator with no change to
// look at (previous nil) holds: it was true of the change that started
// the run.
func (c Condition) holds(subject, previous map[string]any, now time.Time) bool {
	v, present := lookup(subject, c.Field)
	if slices.Contains(changeOperators, c.Operator) {
		if previous == nil {
			return true
		}
		before, changed := lookup(previous, c.Field)
		switch c.Operator {
		case "changed":
			return changed
		case "changed_to":
			return changed && same(v, c.Value)
		default: // changed_from
			return changed && same(before, c.Value)
		}
	}
	switch c.Operator {
	case "present":
		return present && !blank(v)
	case "blank":
		return !present || blank(v)
	case "is":
		return same(v, c.Value)
	case "is_not":
		return !same(v, c.Value)
	case "includes", "not_includes":
		list, _ := v.([]any)
		found := slices.ContainsFunc(list, func(e any) bool { return same(e, c.Value) })
		return found == (c.Operator == "includes")
	case "contains", "starts_with", "ends_with":
		s, ok1 := v.(string)
		want, ok2 := c.Value.(string)
		if !ok1 || !ok2 {
			return false
		}
		s, want = strings.ToLower(s), strings.ToLower(want)
		switch c.Operator {
		case "contains":
			return strings.Contains(s, want)
		case "starts_with":
			return strings.HasPrefix(s, want)
		}
		return strings.HasSuffix(s, want)
	case "less_than", "greater_than":
		a, ok1 := number(v)
		b, ok2 := number(c.Value)
		if !ok1 || !ok2 {
			return false
		}
		if c.Operator == "less_than" {
			return a < b
		}
		return a > b
	case "hours_since":
		// At least value hours have passed since the timestamp.
		s, _ := v.(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		hours, ok := number(c.Value)
		return err == nil && ok && now.Sub(at).Hours() >= hours
	}
	return false
}

// lookup reads a dotted field ("requester.email") of a JSON object.
func lookup(obj map[string]any, field string) (any, bool) {
	var cur any = obj
	for part := range strings.SplitSeq(field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// same compares a JSON value with a condition's value: strings without
// regard to case, numbers as numbers.
func same(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && strings.EqualFold(x, y)
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func blank(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	}
	return false
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
	bad = append(bad, d.Conditions.validate("conditions")...)
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

func (c *Conditions) validate(path string) []FieldError {
	var bad []FieldError
	for group, list := range map[string][]Condition{"all": c.All, "any": c.Any} {
		if len(list) > 50 {
			bad = append(bad, FieldError{Field: path + "." + group, Code: "max", Message: "At most 50 conditions."})
		}
		for i, cond := range list {
			at := fmt.Sprintf("%s.%s[%d]", path, group, i)
			if !conditionField.MatchString(cond.Field) {
				bad = append(bad, FieldError{Field: at + ".field", Code: "unknown_field",
					Message: "A field of the object as the API shows it, dotted for a nested one (requester.email)."})
			}
			switch {
			case !slices.Contains(ConditionOperators, cond.Operator):
				bad = append(bad, FieldError{Field: at + ".operator", Code: "unknown_operator",
					Message: "One of " + strings.Join(ConditionOperators, ", ") + "."})
			case slices.Contains(bareOperators, cond.Operator) && cond.Value != nil:
				bad = append(bad, FieldError{Field: at + ".value", Code: "not_allowed", Message: cond.Operator + " takes no value."})
			case !slices.Contains(bareOperators, cond.Operator) && cond.Value == nil:
				bad = append(bad, FieldError{Field: at + ".value", Code: "required", Message: cond.Operator + " needs a value."})
			case slices.Contains([]string{"less_than", "greater_than", "hours_since"}, cond.Operator):
				if _, ok := number(cond.Value); !ok {
					bad = append(bad, FieldError{Field: at + ".value", Code: "number", Message: cond.Operator + " compares with a number."})
				}
			}
		}
	}
	slices.SortFunc(bad, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return bad
}

// conditionField is the form of a condition's field.
var conditionField = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}(\.[A-Za-z][A-Za-z0-9_]{0,63}){0,3}$`)

func (s *AutomationStep) validate(at, object string, triggers map[string]string) []FieldError {
	var bad []FieldError
	add := func(field, code, format string, args ...any) {
		bad = append(bad, FieldError{Field: at + field, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	onTicket := func() bool {
		if object != AutomationTicket {
			add(".action", "not_available", "%s acts on tickets only (for now); a %s rule takes notify, webhook, delay and wait_for (and set, on deals and leads).", s.Action, object)
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
			bad = append(bad, s.Where.validate(at+".where")...)
		}
	default:
		add(".action", "unknown_action", "One of set, add_tags, remove_tags, comment, notify, webhook, delay, wait_for.")
	}
	return bad
}

// isoDuration is the ISO 8601 durations a step takes: weeks, or days and
// a time part (P1D, PT2H, P1DT12H, PT90M).
var isoDuration = regexp.MustCompile(`^P(?:(\d+)W|(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?)$`)

// ParseISODuration reads an ISO 8601 duration of weeks, days, hours,
// minutes and seconds (no years or months: their length varies).
func ParseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, fmt.Errorf("an ISO 8601 duration such as PT2H, P1D or P1DT12H (weeks, days, hours, minutes, seconds), not %q", s)
	}
	units := []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
	var d time.Duration
	for i, unit := range units {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 32)
		if err != nil || time.Duration(n) > (1<<59)/unit { // each part, and so their sum, far from overflowing
			return 0, fmt.Errorf("%q is too long", s)
		}
		d += time.Duration(n) * unit
	}
	return d, nil
}

// templateVar is a {{object.field}} in a template.
var templateVar = regexp.MustCompile(`\{\{\s*([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z][A-Za-z0-9_.]*)\s*\}\}`)

// templateFields are the variables each object's templates may name.
var templateFields = map[string][]string{
	AutomationTicket:   {"id", "number", "subject", "status", "priority", "email", "agentId", "channel"},
	AutomationLead:     {"id", "name", "email", "company", "score", "status", "source"},
	AutomationDeal:     {"id", "title", "stage", "amount", "currency", "companyName", "contactEmail"},
	AutomationContact:  {"id", "name", "email", "phone", "company"},
	AutomationCustomer: {"id", "name", "email", "company"},
}

// CheckTemplate reports the first variable of body that a rule about
// object cannot fill, or a "{{" that is not a variable.
func CheckTemplate(body, object string) error {
	rest := templateVar.ReplaceAllStringFunc(body, func(v string) string {
		return ""
	})
	if strings.Contains(rest, "{{") {
		return fmt.Errorf(`"{{" opens a variable such as {{%s.%s}}`, object, templateFields[object][1])
	}
	for _, m := range templateVar.FindAllStringSubmatch(body, -1) {
		if m[1] != object || !slices.Contains(templateFields[object], m[2]) {
			return fmt.Errorf("unknown variable {{%s.%s}}: a %s rule fills %s", m[1], m[2], object, templateList(object))
		}
	}
	return nil
}

func templateList(object string) string {
	var names []string
	for _, f := range templateFields[object] {
		names = append(names, "{{"+object+"."+f+"}}")
	}
	return strings.Join(names, ", ")
}

// RenderTemplate fills body's variables from subject, the object's JSON
// (body was checked by CheckTemplate when the rule was saved).
func RenderTemplate(body, object string, subject map[string]any) string {
	return templateVar.ReplaceAllStringFunc(body, func(v string) string {
		m := templateVar.FindStringSubmatch(v)
		value, ok := lookup(subject, m[2])
		if !ok || value == nil {
			return ""
		}
		if n, isNumber := value.(float64); isNumber {
			return strconv.FormatFloat(n, 'f', -1, 64)
		}
		return fmt.Sprint(value)
	})
}
