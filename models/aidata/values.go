package aidata

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// How a cell's text is read: a missing value, a number as people write
// it in tables, a date.

var (
	thousands = regexp.MustCompile(`^[-+]?\d{1,3}(,\d{3})+(\.\d+)?$`)
	missing   = map[string]bool{"": true, "-": true, "n/a": true, "na": true, "null": true, "none": true, "nan": true}
)

func isMissing(v string) bool { return missing[strings.ToLower(strings.TrimSpace(v))] }

// ParseNumber reads a number as people write it in tables: an optional
// currency sign ($ € £ ¥), thousands separators (1,234.50) and a trailing
// percent sign (12% → 12).
func ParseNumber(v string) (float64, bool) {
	s := strings.TrimSpace(v)
	if isMissing(s) {
		return 0, false
	}
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	for _, sign := range []string{"$", "€", "£", "¥"} {
		s = strings.TrimPrefix(s, sign)
	}
	s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	if thousands.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

var dateLayouts = []string{time.DateOnly, time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01", "2006/01/02"}

// ParseDate reads an ISO 8601 date (2026-03-01), date-time or month
// (2026-03, the month's first day).
func ParseDate(v string) (time.Time, bool) {
	s := strings.TrimSpace(v)
	for _, l := range dateLayouts {
		if d, err := time.Parse(l, s); err == nil {
			return d, true
		}
	}
	return time.Time{}, false
}
