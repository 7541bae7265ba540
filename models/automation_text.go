package models

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The text an automation rule is written in: ISO 8601 durations (delays,
// timeouts) and the templates of its comments and notifications.

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
