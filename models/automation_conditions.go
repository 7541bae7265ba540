package models

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The conditions of an automation rule (and of a wait_for step): their
// evaluation against an object as the API shows it (a map of its JSON),
// and their validation. Pure: the matching in a change's transaction, the
// run's workflow and its activities all call it.

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

func (c *Conditions) validate(path, object string) []FieldError {
	var bad []FieldError
	for group, list := range map[string][]Condition{"all": c.All, "any": c.Any} {
		if len(list) > 50 {
			bad = append(bad, FieldError{Field: path + "." + group, Code: "max", Message: "At most 50 conditions."})
		}
		for i, cond := range list {
			at := fmt.Sprintf("%s.%s[%d]", path, group, i)
			if !knownField(object, cond.Field) {
				bad = append(bad, FieldError{Field: at + ".field", Code: "unknown_field",
					Message: fmt.Sprintf("A field of the %s as the API shows it: %s (dotted for a nested one: %s).", object,
						strings.Join(AutomationFields(object), ", "), nestedExample[object])})
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

// automationFields are the fields of each object as the API shows it
// (the views; a test there keeps the lists equal to them), and what the
// matching adds: a ticket's requester (its customer), the comment of
// comment.created and the message of email.received. A field ending in
// "." is an object, named with one of its own fields after the dot.
var automationFields = map[string][]string{
	AutomationTicket: {"id", "workspaceId", "number", "subject", "description", "status", "priority", "channel", "email", "customerId",
		"agentId", "tags", "allowedStatuses", "followsTicketId", "firstResponseAt", "solvedAt", "closedAt", "sla.", "createdAt", "updatedAt",
		"requester.", "comment.", "message.", "fields."},
	AutomationLead: {"id", "orgId", "name", "email", "phone", "company", "value", "source", "status", "score", "probability",
		"scoreFactors.", "assignedToId", "contactId", "dealId", "lastActivityAt", "createdAt", "updatedAt", "fields."},
	AutomationDeal: {"id", "orgId", "title", "amount", "currency", "stage", "probability", "closeDate", "companyName", "contactEmail",
		"contactId", "leadId", "assignedToId", "lostReason", "stageChangedAt", "wonAt", "createdAt", "updatedAt", "fields."},
	AutomationContact:  {"id", "orgId", "name", "email", "phone", "company", "designation", "type", "notes", "customerId", "createdAt", "updatedAt", "fields."},
	AutomationCustomer: {"id", "workspaceId", "name", "email", "phone", "company", "notes", "contactId", "createdAt", "updatedAt", "fields."},
}

// nestedExample is a nested field of each object, for the error message.
var nestedExample = map[string]string{
	AutomationTicket: "requester.email", AutomationLead: "scoreFactors.company", AutomationDeal: "fields.<key>",
	AutomationContact: "fields.<key>", AutomationCustomer: "fields.<key>",
}

// AutomationFields are the fields object's conditions test, as the error
// that names them shows them.
func AutomationFields(object string) []string {
	var out []string
	for _, f := range automationFields[object] {
		if name, nested := strings.CutSuffix(f, "."); nested {
			f = name + ".…"
		}
		out = append(out, f)
	}
	return out
}

// knownField tells whether field names a field of object (an object's
// field only with a field of its own after the dot).
func knownField(object, field string) bool {
	if !conditionField.MatchString(field) {
		return false
	}
	head, rest, dotted := strings.Cut(field, ".")
	if _, known := automationFields[object]; !known {
		return true // the object is reported wrong; not its fields
	}
	if dotted {
		return rest != "" && slices.Contains(automationFields[object], head+".")
	}
	return slices.Contains(automationFields[object], head)
}
