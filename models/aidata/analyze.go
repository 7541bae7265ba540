package aidata

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Column types.
const (
	TypeNumber = "number"
	TypeDate   = "date"
	TypeText   = "text"
)

// Trend directions.
const (
	TrendUp   = "up"
	TrendDown = "down"
	TrendFlat = "flat"
)

// AxisRowOrder is the trend axis when the table has no date column.
const AxisRowOrder = "row_order"

// FlatThreshold: a fitted change smaller than this share of the mean's
// magnitude is a flat trend.
const FlatThreshold = 0.05

// MaxGroups bounds the groups reported; the rest are counted in
// GroupsOmitted (largest groups are kept).
const MaxGroups = 50

// Analysis is every number of an analysis.
type Analysis struct {
	Rows int `json:"rows"`
	// TrendAxis is what trends are measured over: the first date column
	// (slope per day) or "row_order" (slope per row).
	TrendAxis     string        `json:"trend_axis"`
	Columns       []ColumnStats `json:"columns"`
	GroupBy       string        `json:"group_by,omitempty"`
	Groups        []GroupStats  `json:"groups,omitempty"`
	GroupsOmitted int           `json:"groups_omitted,omitempty"`
}

// ColumnStats describes one column. Numbers get sum, mean, min, max and a
// trend; dates their range; text its distinct and most frequent values.
type ColumnStats struct {
	Name     string       `json:"name"`
	Type     string       `json:"type"`
	Count    int          `json:"count"`
	Missing  int          `json:"missing"`
	Sum      *float64     `json:"sum,omitempty"`
	Mean     *float64     `json:"mean,omitempty"`
	Min      *float64     `json:"min,omitempty"`
	Max      *float64     `json:"max,omitempty"`
	Trend    *Trend       `json:"trend,omitempty"`
	Earliest string       `json:"earliest,omitempty"`
	Latest   string       `json:"latest,omitempty"`
	Distinct int          `json:"distinct,omitempty"`
	Top      []ValueCount `json:"top,omitempty"`
}

// Trend is the least-squares line of a numeric column over the trend axis.
type Trend struct {
	Direction string  `json:"direction"`
	Slope     float64 `json:"slope"`
	// Change is the fitted value at the last point minus the fitted value
	// at the first; ChangePct relates it to the fitted first value (absent
	// when that is zero).
	Change    float64  `json:"change"`
	ChangePct *float64 `json:"change_pct,omitempty"`
	Points    int      `json:"points"`
}

// ValueCount is a text value and how often it occurs.
type ValueCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// GroupStats holds the numeric columns' statistics for the rows sharing
// one value of the group-by column.
type GroupStats struct {
	Key     string        `json:"key"`
	Rows    int           `json:"rows"`
	Columns []ColumnStats `json:"columns"`
}

// Options of Analyze.
type Options struct {
	// GroupBy names a column whose values group the rows.
	GroupBy string
}

// ColumnError is returned when an option names no column of the table.
type ColumnError struct {
	Option  string
	Name    string
	Columns []string
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("%s %q is not a column; columns are: %s", e.Option, e.Name, strings.Join(e.Columns, ", "))
}

// Analyze computes the statistics of t.
func Analyze(t *Table, opts Options) (*Analysis, error) {
	groupCol := -1
	if opts.GroupBy != "" {
		groupCol = columnIndex(t.Columns, opts.GroupBy)
		if groupCol < 0 {
			return nil, &ColumnError{Option: "group_by", Name: opts.GroupBy, Columns: t.Columns}
		}
	}
	types := make([]string, len(t.Columns))
	for c := range t.Columns {
		types[c] = columnType(t.Rows, c)
	}
	axis, xs := trendAxis(t, types)
	a := &Analysis{Rows: len(t.Rows), TrendAxis: axis}
	all := make([]int, len(t.Rows))
	for i := range all {
		all[i] = i
	}
	for c, name := range t.Columns {
		a.Columns = append(a.Columns, columnStats(t, name, c, types[c], all, xs))
	}
	if groupCol < 0 {
		return a, nil
	}
	a.GroupBy = t.Columns[groupCol]
	members := map[string][]int{}
	var keys []string
	for i, row := range t.Rows {
		k := row[groupCol]
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	sort.SliceStable(keys, func(i, j int) bool { return len(members[keys[i]]) > len(members[keys[j]]) })
	if len(keys) > MaxGroups {
		a.GroupsOmitted = len(keys) - MaxGroups
		keys = keys[:MaxGroups]
	}
	for _, k := range keys {
		g := GroupStats{Key: k, Rows: len(members[k])}
		for c, name := range t.Columns {
			if c != groupCol && types[c] == TypeNumber {
				g.Columns = append(g.Columns, columnStats(t, name, c, TypeNumber, members[k], xs))
			}
		}
		a.Groups = append(a.Groups, g)
	}
	return a, nil
}

func columnIndex(cols []string, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c, strings.TrimSpace(name)) {
			return i
		}
	}
	return -1
}

// columnType: number when every present value is a number, date when every
// present value is a date, text otherwise (also when nothing is present).
func columnType(rows [][]string, c int) string {
	number, date, present := true, true, false
	for _, row := range rows {
		v := row[c]
		if isMissing(v) {
			continue
		}
		present = true
		if _, ok := ParseNumber(v); !ok {
			number = false
		}
		if _, ok := ParseDate(v); !ok {
			date = false
		}
	}
	switch {
	case !present:
		return TypeText
	case number:
		return TypeNumber
	case date:
		return TypeDate
	default:
		return TypeText
	}
}

func columnStats(t *Table, name string, c int, typ string, rows []int, xs []float64) ColumnStats {
	s := ColumnStats{Name: name, Type: typ}
	switch typ {
	case TypeNumber:
		var vals, px []float64
		for _, i := range rows {
			v, ok := ParseNumber(t.Rows[i][c])
			if !ok {
				s.Missing++
				continue
			}
			vals = append(vals, v)
			px = append(px, xs[i])
		}
		s.Count = len(vals)
		if len(vals) == 0 {
			return s
		}
		sum, lo, hi := 0.0, vals[0], vals[0]
		for _, v := range vals {
			sum += v
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		mean := sum / float64(len(vals))
		s.Sum, s.Mean, s.Min, s.Max = ptr(round(sum)), ptr(round(mean)), ptr(round(lo)), ptr(round(hi))
		s.Trend = trend(px, vals, mean)
	case TypeDate:
		var first, last time.Time
		for _, i := range rows {
			d, ok := ParseDate(t.Rows[i][c])
			if !ok {
				s.Missing++
				continue
			}
			if s.Count == 0 || d.Before(first) {
				first = d
			}
			if s.Count == 0 || d.After(last) {
				last = d
			}
			s.Count++
		}
		if s.Count > 0 {
			s.Earliest, s.Latest = first.Format(time.DateOnly), last.Format(time.DateOnly)
		}
	default:
		counts := map[string]int{}
		for _, i := range rows {
			v := t.Rows[i][c]
			if isMissing(v) {
				s.Missing++
				continue
			}
			s.Count++
			counts[v]++
		}
		s.Distinct = len(counts)
		for v, n := range counts {
			s.Top = append(s.Top, ValueCount{Value: v, Count: n})
		}
		slices.SortFunc(s.Top, func(a, b ValueCount) int {
			if a.Count != b.Count {
				return b.Count - a.Count
			}
			return strings.Compare(a.Value, b.Value)
		})
		if len(s.Top) > 5 {
			s.Top = s.Top[:5]
		}
	}
	return s
}

func ptr(f float64) *float64 { return &f }

// round keeps six decimals: enough for money and ratios, and it removes
// binary noise such as 0.30000000000000004.
func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }
