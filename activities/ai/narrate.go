package ai

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/business-suite/suite/models/aidata"
)

// localNarrative writes the analysis as prose from its computed numbers:
// the answer to the question first (when the question asks for a highest,
// lowest, total, average, count or trend the numbers hold), then an
// overview, the numeric columns and the groups. Figures are quoted from
// the analysis; shares of a total are the only arithmetic it adds.
func localNarrative(question string, a *aidata.Analysis) string {
	var parts []string
	if question != "" {
		parts = append(parts, answer(question, a))
	}
	numeric := 0
	for _, c := range a.Columns {
		if c.Type == aidata.TypeNumber {
			numeric++
		}
	}
	parts = append(parts, fmt.Sprintf("The data has %s and %s (%d numeric).",
		plural(a.Rows, "row"), plural(len(a.Columns), "column"), numeric))
	shown := 0
	for _, c := range a.Columns {
		if c.Type != aidata.TypeNumber || c.Count == 0 || shown == 5 {
			continue
		}
		shown++
		parts = append(parts, describeColumn(c, a.TrendAxis))
	}
	if len(a.Groups) > 1 {
		if col := firstNumeric(a, ""); col != "" {
			hi, lo := extremeGroups(a, col, "sum")
			parts = append(parts, fmt.Sprintf("By %s, %s has the largest %s total (%s over %s) and %s the smallest (%s over %s).",
				a.GroupBy, hi.Key, col, num(groupValue(hi, col, "sum")), plural(hi.Rows, "row"),
				lo.Key, num(groupValue(lo, col, "sum")), plural(lo.Rows, "row")))
		}
	}
	return strings.Join(parts, " ")
}

func describeColumn(c aidata.ColumnStats, axis string) string {
	s := fmt.Sprintf("%s totals %s over %s (mean %s, min %s, max %s)", c.Name, num(*c.Sum), plural(c.Count, "value"),
		num(*c.Mean), num(*c.Min), num(*c.Max))
	if c.Missing > 0 {
		s += fmt.Sprintf(", with %s missing", plural(c.Missing, "value"))
	}
	if c.Trend != nil {
		s += " and " + trendWords(c.Trend, axis)
	}
	return s + "."
}

func trendWords(t *aidata.Trend, axis string) string {
	over := "in row order"
	if axis != aidata.AxisRowOrder {
		over = "over " + axis
	}
	switch t.Direction {
	case aidata.TrendUp:
		return "rises " + over + change(t)
	case aidata.TrendDown:
		return "falls " + over + change(t)
	default:
		return "stays flat " + over
	}
}

func change(t *aidata.Trend) string {
	if t.ChangePct == nil {
		return ""
	}
	return fmt.Sprintf(" (%+.1f%% from the fitted first to the fitted last value)", *t.ChangePct)
}

// answer addresses the question with the figure it asks for.
func answer(question string, a *aidata.Analysis) string {
	q := strings.ToLower(question)
	col := firstNumeric(a, q)
	prefix := fmt.Sprintf("On %q: ", question)
	if col == "" {
		return prefix + "the data has no numeric column, so only counts can answer it; " + plural(a.Rows, "row") + " in all."
	}
	stat := "sum"
	if hasAny(q, "average", "mean", "typical", "per ") {
		stat = "mean"
	}
	var c aidata.ColumnStats
	for _, x := range a.Columns {
		if x.Name == col {
			c = x
		}
	}
	switch {
	case hasAny(q, "trend", "grow", "increas", "decreas", "declin", "rising", "falling", "over time", "change", "going up", "going down"):
		if c.Trend == nil {
			return prefix + col + " has too few values for a trend."
		}
		return prefix + col + " " + trendWords(c.Trend, a.TrendAxis) + "."
	case hasAny(q, "highest", "most", "largest", "biggest", "top", "best", "maximum", "max", "leading", "more"):
		if len(a.Groups) > 1 {
			hi, _ := extremeGroups(a, col, stat)
			return prefix + fmt.Sprintf("%s %s, with %s %s of %s%s.", a.GroupBy, hi.Key, col, statName(stat), num(groupValue(hi, col, stat)), share(a, hi, col, stat))
		}
		return prefix + fmt.Sprintf("the highest %s is %s.", col, num(*c.Max))
	case hasAny(q, "lowest", "least", "smallest", "worst", "minimum", "min", "fewest", "less"):
		if len(a.Groups) > 1 {
			_, lo := extremeGroups(a, col, stat)
			return prefix + fmt.Sprintf("%s %s, with %s %s of %s%s.", a.GroupBy, lo.Key, col, statName(stat), num(groupValue(lo, col, stat)), share(a, lo, col, stat))
		}
		return prefix + fmt.Sprintf("the lowest %s is %s.", col, num(*c.Min))
	case stat == "mean":
		return prefix + fmt.Sprintf("the average %s is %s.", col, num(*c.Mean))
	case hasAny(q, "total", "sum", "how much", "overall"):
		return prefix + fmt.Sprintf("the total %s is %s.", col, num(*c.Sum))
	case hasAny(q, "how many", "count", "number of"):
		return prefix + fmt.Sprintf("there are %s (%s with a %s).", plural(a.Rows, "row"), plural(c.Count, "row"), col)
	}
	return prefix + "the figures below cannot answer it directly; these are the numbers the data holds."
}

func statName(stat string) string {
	if stat == "mean" {
		return "an average"
	}
	return "a total"
}

// share is a group's part of the whole, for totals.
func share(a *aidata.Analysis, g aidata.GroupStats, col, stat string) string {
	if stat != "sum" {
		return ""
	}
	for _, c := range a.Columns {
		if c.Name == col && c.Sum != nil && *c.Sum != 0 {
			return fmt.Sprintf(" (%.0f%% of all %s)", groupValue(g, col, "sum") / *c.Sum * 100, col)
		}
	}
	return ""
}

// firstNumeric is the numeric column the question names, else the first.
func firstNumeric(a *aidata.Analysis, q string) string {
	first := ""
	for _, c := range a.Columns {
		if c.Type != aidata.TypeNumber || c.Count == 0 {
			continue
		}
		if first == "" {
			first = c.Name
		}
		name := strings.ToLower(c.Name)
		if q != "" && (strings.Contains(q, name) || strings.Contains(q, strings.ReplaceAll(name, "_", " ")) || strings.Contains(q, strings.TrimSuffix(name, "s"))) {
			return c.Name
		}
	}
	return first
}

func extremeGroups(a *aidata.Analysis, col, stat string) (hi, lo aidata.GroupStats) {
	best, worst := math.Inf(-1), math.Inf(1)
	for _, g := range a.Groups {
		v := groupValue(g, col, stat)
		if math.IsNaN(v) {
			continue
		}
		if v > best {
			best, hi = v, g
		}
		if v < worst {
			worst, lo = v, g
		}
	}
	return hi, lo
}

func groupValue(g aidata.GroupStats, col, stat string) float64 {
	for _, c := range g.Columns {
		if c.Name != col || c.Sum == nil {
			continue
		}
		if stat == "mean" {
			return *c.Mean
		}
		return *c.Sum
	}
	return math.NaN()
}

func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// num formats a figure with thousands separators and at most two decimals.
func num(f float64) string {
	neg := f < 0
	s := strconv.FormatFloat(math.Abs(f), 'f', 2, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}
