package ai

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kljensen/snowball/english"

	"github.com/business-suite/suite/models"
)

// LengthSpec is what a summary length means: a share of the document's
// sentences, kept between Min and Max sentences (never more than the
// document has). Words is the matching budget given to a model.
type LengthSpec struct {
	Ratio    float64
	Min, Max int
	Words    int
}

// Lengths defines short, medium (the default) and long.
var Lengths = map[string]LengthSpec{
	models.AILengthShort:  {Ratio: 0.10, Min: 1, Max: 3, Words: 60},
	models.AILengthMedium: {Ratio: 0.20, Min: 3, Max: 6, Words: 120},
	models.AILengthLong:   {Ratio: 0.35, Min: 5, Max: 12, Words: 250},
}

// LengthOf returns the spec of length (medium when unknown).
func LengthOf(length string) LengthSpec {
	if s, ok := Lengths[length]; ok {
		return s
	}
	return Lengths[models.AILengthMedium]
}

// Sentences is how many sentences a summary of n candidate sentences has.
func (s LengthSpec) Sentences(n int) int {
	k := int(math.Round(s.Ratio * float64(n)))
	return min(max(k, s.Min), s.Max, n)
}

var (
	greeting = regexp.MustCompile(`(?i)^(hi|hello|hey|dear|good (morning|afternoon|evening)|greetings)\b`)
	signOff  = regexp.MustCompile(`(?i)^(thanks|thank you|many thanks|thx|cheers|best|regards|kind regards|best regards|warm regards|sincerely|talk soon|have a (great|nice|good))\b`)
	// Cue words of what a reader of a summary needs, by kind: problems,
	// causes, decisions, outcomes. Each is a word prefix ("fail" matches
	// fails, failed, failure).
	cues = []cue{
		{1.3, []string{"fail", "error", "broke", "outage", "crash", "none", "unable", "cannot", "can't", "doesn't", "isn't", "issue",
			"problem", "bug", "risk", "urgent", "block", "expire", "reject", "slow", "down", "wrong", "missing", "complain", "late", "delay"}},
		{1.8, []string{"because", "cause", "root", "due", "reason", "dropped", "led"}},
		{1.8, []string{"decid", "decision", "agreed", "approv", "confirm", "postpon", "move", "chose", "priorit", "budget", "deadline"}},
		{1.3, []string{"fixed", "resolv", "works", "working", "synced", "restor", "complet", "releas", "shipped", "refund", "credit", "replac", "through"}},
	}
	request    = regexp.MustCompile(`(?i)\bplease\b|^(can|could|would) you\b`)
	politeness = regexp.MustCompile(`(?i)\b(thank|thanks|sorry|apolog|appreciate|glad|happy to|good news|great)\b`)
)

func toSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// candidate is a sentence that may go into a summary.
type candidate struct {
	unit
	order int
	// opensEntry marks the first sentence of an entry or speaker turn.
	opensEntry bool
	terms      map[string]float64 // stem → tf-idf weight
	norm       float64
	score      float64
}

// extractiveSummary picks the sentences of text that best summarize it, by
// TextRank over TF-IDF cosine similarity between sentences (stemmed, stop
// words dropped), adjusted by cues (sentences stating decisions, problems
// and commitments, numbers and dates, words of the title, the opening),
// with greetings, sign-offs, metadata and very short sentences left out,
// and near-duplicates skipped. The chosen sentences keep document order,
// each prefixed by its speaker when the text names one.
func extractiveSummary(text, length string) (string, int) {
	doc := parseDocument(text)
	title := map[string]bool{}
	var cands []*candidate
	lastSpeaker, lastDate := "\x00", time.Time{}
	for _, u := range doc.Units {
		opens := u.Speaker != lastSpeaker || !u.Date.Equal(lastDate)
		lastSpeaker, lastDate = u.Speaker, u.Date
		if u.Kind == kindTitle {
			for _, w := range stems(u.Text) {
				title[w] = true
			}
			continue
		}
		if !summaryWorthy(u.Text) {
			continue
		}
		cands = append(cands, &candidate{unit: u, order: len(cands), opensEntry: opens})
	}
	if len(cands) == 0 {
		// A text too short for the rules: every sentence it has.
		for _, u := range doc.Units {
			if u.Kind == kindSentence {
				cands = append(cands, &candidate{unit: u, order: len(cands)})
			}
		}
	}
	if len(cands) == 0 {
		return "", 0
	}
	k := LengthOf(length).Sentences(len(cands))
	weigh(cands)
	rank(cands)
	for _, c := range cands {
		c.score *= boost(c, title)
	}
	byScore := slices.Clone(cands)
	sort.SliceStable(byScore, func(i, j int) bool { return byScore[i].score > byScore[j].score })
	var chosen []*candidate
	for _, c := range byScore {
		if len(chosen) == k {
			break
		}
		redundant := false
		for _, p := range chosen {
			if cosine(c, p) > 0.6 {
				redundant = true
				break
			}
		}
		if !redundant {
			chosen = append(chosen, c)
		}
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].order < chosen[j].order })
	parts := make([]string, len(chosen))
	for i, c := range chosen {
		parts[i] = c.Text
		if c.Speaker != "" {
			parts[i] = stripRole(c.Speaker) + ": " + c.Text
		}
	}
	return strings.Join(parts, " "), len(parts)
}

func summaryWorthy(s string) bool {
	n := len(words(s))
	if n < 4 {
		return false
	}
	if n <= 8 && (greeting.MatchString(s) || signOff.MatchString(s)) {
		return false
	}
	return true
}

// stems are the stemmed content words of s.
func stems(s string) []string {
	var out []string
	for _, w := range words(s) {
		w = strings.Trim(w, "'’")
		if len(w) < 2 || english.IsStopWord(w) {
			continue
		}
		out = append(out, english.Stem(w, false))
	}
	return out
}

// weigh gives each candidate its TF-IDF vector.
func weigh(cands []*candidate) {
	df := map[string]int{}
	for _, c := range cands {
		c.terms = map[string]float64{}
		for _, s := range stems(c.Text) {
			c.terms[s]++
		}
		for s := range c.terms {
			df[s]++
		}
	}
	n := float64(len(cands))
	for _, c := range cands {
		var sq float64
		for s, tf := range c.terms {
			w := tf * (math.Log(n/float64(df[s])) + 1)
			c.terms[s] = w
			sq += w * w
		}
		c.norm = math.Sqrt(sq)
	}
}

func cosine(a, b *candidate) float64 {
	if a.norm == 0 || b.norm == 0 {
		return 0
	}
	small, large := a.terms, b.terms
	if len(small) > len(large) {
		small, large = large, small
	}
	var dot float64
	for s, w := range small {
		dot += w * large[s]
	}
	return dot / (a.norm * b.norm)
}

// rank runs PageRank (damping 0.85) on the similarity graph.
func rank(cands []*candidate) {
	n := len(cands)
	sim := make([][]float64, n)
	out := make([]float64, n)
	for i := range cands {
		sim[i] = make([]float64, n)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			s := cosine(cands[i], cands[j])
			sim[i][j], sim[j][i] = s, s
			out[i] += s
			out[j] += s
		}
	}
	const d = 0.85
	score := make([]float64, n)
	for i := range score {
		score[i] = 1 / float64(n)
	}
	for range 100 {
		next := make([]float64, n)
		var delta float64
		for i := range n {
			sum := 0.0
			for j := range n {
				if out[j] > 0 && sim[j][i] > 0 {
					sum += sim[j][i] / out[j] * score[j]
				}
			}
			next[i] = (1-d)/float64(n) + d*sum
			delta += math.Abs(next[i] - score[i])
		}
		score = next
		if delta < 1e-9 {
			break
		}
	}
	for i, c := range cands {
		c.score = score[i]
	}
}

// boost weighs what TextRank cannot see: cue words of problems, causes,
// decisions and outcomes; figures and dates; words of the title; the
// opening sentence of the document and of each entry or turn; less for
// questions and courtesies.
func boost(c *candidate, title map[string]bool) float64 {
	b := 1.0
	ws := words(c.Text)
	kinds := 0
	for _, k := range cues {
		if kinds < 2 && hasCue(ws, k.prefixes) {
			b *= k.weight
			kinds++
		}
	}
	if c.Action || request.MatchString(c.Text) {
		b *= 0.85 // to-dos and requests: the action-items operation's matter
	}
	if strings.ContainsAny(c.Text, "0123456789") {
		b *= 1.1
	}
	if len(title) > 0 {
		shared := 0
		for s := range c.terms {
			if title[s] {
				shared++
			}
		}
		b *= 1 + 0.15*float64(min(shared, 3))
	}
	switch {
	case c.order == 0:
		b *= 1.5
	case c.opensEntry:
		b *= 1.15
	}
	if strings.HasSuffix(c.Text, "?") {
		b *= 0.8
	}
	if politeness.MatchString(c.Text) {
		b *= 0.7
	}
	return b
}

// cue is a kind of cue word and its weight: causes and decisions weigh
// most.
type cue struct {
	weight   float64
	prefixes []string
}

func hasCue(ws []string, prefixes []string) bool {
	for _, w := range ws {
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
	}
	return false
}
