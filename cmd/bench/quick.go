package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"
)

// quickProfile is what -quick sets, for the flags the command line does
// not set itself: a run a developer makes before each submission, in
// about five minutes on two cores, that shows a row gone wrong (a ratio
// halved, a pipeline that stalls) without the full run's half hour. One
// short round per paired row cannot give a median or a range, and the
// intake runs are a fraction of the README's, so its figures are never
// compared with the README's table; the loads that cannot be quick
// (load.slow) are skipped.
var quickProfile = map[string]string{
	"rounds":     "1",
	"duration":   "3s",
	"intake-for": "10s",
	"burst":      "2000",
	"mixed-for":  "10s",
}

// applyQuick gives the flags fs's command line left unset their quick
// values, and says what -quick chose.
func applyQuick(fs *flag.FlagSet) (string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var chosen []string
	for name, value := range quickProfile {
		if set[name] {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return "", fmt.Errorf("-quick: -%s %s: %w", name, value, err)
		}
		chosen = append(chosen, "-"+name+" "+value)
	}
	sort.Strings(chosen)
	return strings.Join(chosen, ", "), nil
}

// quickBanner is printed above the quick profile's output and table.
func quickBanner(chosen string) string {
	return "QUICK PROFILE (-quick: " + chosen + "; the loads that cannot be quick are skipped): " +
		"a check before a submission, one short round per row. Its figures are not the README's and are not to be compared with them."
}
