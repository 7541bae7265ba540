package ai

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// unitKind tells what a piece of a document is.
type unitKind int

const (
	kindSentence unitKind = iota
	kindTitle             // a heading or a title line: context, not content
)

// unit is one sentence (or title) of a document, with what the text around
// it says about it.
type unit struct {
	Text    string
	Kind    unitKind
	Speaker string    // who wrote or said it, when the text tells
	Date    time.Time // the date of the entry it belongs to (zero: none stated)
	// Action is set for sentences under an action label ("TODO:",
	// "Action items:", "Next steps:"): they are action items by position.
	Action bool
	Bullet bool
}

// document is a parsed text.
type document struct {
	Units []unit
	// People are names the text introduces (attendees, speakers).
	People []string
	// Date is the document's own date: a "Date:" line, or a date in its
	// first line (zero when it states none).
	Date time.Time
}

var (
	// "[2026-03-02 14:05] Dana Smith (agent):" — how assembled records date
	// their entries; the rest of the line may hold text.
	stampLine = regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::\d{2})?)?[^\]]*\]\s*(.*)$`)
	// "Alice:" or "Dana Smith (agent): text" — a speaker label.
	speakerLine = regexp.MustCompile(`^((?:[A-Z][\p{L}'’.-]*)(?:\s+[A-Z][\p{L}'’.-]*){0,2})(?:\s*\(([^)]*)\))?:\s*(.*)$`)
	// "Key: value" metadata of e-mails, minutes and assembled records.
	metaLine   = regexp.MustCompile(`(?i)^(date|dated|when|attendees|participants|present|status|email|phone|subject|from|to|cc|priority|location|time|notes|owner)\s*:\s*(.*)$`)
	actionLine = regexp.MustCompile(`(?i)^(?:todo|to-do|to do|action items?|actions?|ai|follow[- ]?ups?|next steps?)\s*:\s*(.*)$`)
	bulletLine = regexp.MustCompile(`^(?:[-*•+]|\d{1,2}[.)]|\[[ xX]\])\s+(.*)$`)
	headingMD  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`)
	isoDate    = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)
)

// labels that look like speakers but are not.
var notSpeakers = map[string]bool{
	"note": true, "notes": true, "update": true, "summary": true, "agenda": true, "decision": true, "decisions": true,
	"question": true, "answer": true, "re": true, "fyi": true, "ps": true, "p.s": true, "important": true, "warning": true,
	"result": true, "results": true, "background": true, "context": true, "problem": true, "issue": true, "steps": true,
	"ticket": true, "lead": true, "customer": true, "tickets": true, "interactions": true, "timeline": true,
}

// parseDocument splits text into units: line by line, recognising stamped
// entry headers, speaker labels, metadata, action labels, bullets and
// headings, and splitting prose into sentences.
func parseDocument(text string) document {
	var d document
	var speaker string
	labelled := false // the speaker came from a "Name:" label, which lasts one paragraph
	var entryDate time.Time
	actionList := false
	first := true
	people := map[string]bool{}
	addPerson := func(name string) {
		name = strings.TrimSpace(name)
		if name != "" && !people[strings.ToLower(name)] {
			people[strings.ToLower(name)] = true
			d.People = append(d.People, name)
		}
	}
	emit := func(content string, u unit) {
		for _, s := range splitSentences(content) {
			u.Text = s
			d.Units = append(d.Units, u)
		}
	}
	for raw := range strings.SplitSeq(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			actionList = false
			if labelled {
				speaker, labelled = "", false
			}
			continue
		}
		isFirst := first
		first = false
		base := unit{Speaker: speaker, Date: entryDate}
		if m := stampLine.FindStringSubmatch(line); m != nil {
			if t, err := time.Parse(time.DateOnly, m[1]); err == nil {
				entryDate = t
			}
			speaker, labelled = "", false
			rest := m[4]
			if sm := speakerLine.FindStringSubmatch(rest); sm != nil && !notSpeakers[strings.ToLower(sm[1])] {
				speaker = sm[1]
				addPerson(speaker)
				rest = sm[3]
			} else if before, ok := strings.CutSuffix(rest, ":"); ok {
				speaker = stripRole(before)
				addPerson(speaker)
				rest = ""
			}
			if rest != "" {
				emit(rest, unit{Speaker: speaker, Date: entryDate})
			}
			continue
		}
		if m := headingMD.FindStringSubmatch(line); m != nil {
			if labelled {
				speaker, labelled = "", false
			}
			actionList = actionLine.MatchString(m[1]+":") || actionLine.MatchString(m[1])
			d.noteDate(m[1], isFirst)
			d.Units = append(d.Units, unit{Text: m[1], Kind: kindTitle, Date: entryDate})
			continue
		}
		if m := actionLine.FindStringSubmatch(line); m != nil {
			if m[1] == "" {
				actionList = true
				continue
			}
			base.Action = true
			emit(m[1], base)
			continue
		}
		if m := metaLine.FindStringSubmatch(line); m != nil {
			key := strings.ToLower(m[1])
			switch key {
			case "date", "dated", "when":
				if t, ok := findDate(m[2]); ok {
					entryDate = t
					if d.Date.IsZero() {
						d.Date = t
					}
				}
			case "attendees", "participants", "present":
				for _, p := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ';' }) {
					addPerson(stripRole(strings.TrimSuffix(strings.TrimSpace(p), ".")))
				}
			case "notes":
				emit(m[2], base)
			}
			continue
		}
		if m := bulletLine.FindStringSubmatch(line); m != nil {
			base.Bullet, base.Action = true, actionList
			content := m[1]
			if sm := speakerLine.FindStringSubmatch(content); sm != nil && !notSpeakers[strings.ToLower(sm[1])] && sm[3] != "" && len(strings.Fields(sm[1])) <= 3 && !looksLikeSentenceStart(sm[1]) {
				// "- Priya: send the quote" names the owner, as a label
				base.Speaker = sm[1]
				addPerson(sm[1])
				content = sm[3]
			}
			emit(content, base)
			continue
		}
		if m := speakerLine.FindStringSubmatch(line); m != nil && !notSpeakers[strings.ToLower(m[1])] && m[3] != "" && !looksLikeSentenceStart(m[1]) {
			speaker, labelled = m[1], true
			addPerson(speaker)
			emit(m[3], unit{Speaker: speaker, Date: entryDate})
			continue
		}
		if strings.Contains(line, " · ") {
			continue // a metadata row of an assembled record
		}
		if isFirst && isTitle(line) {
			d.noteDate(line, true)
			d.Units = append(d.Units, unit{Text: line, Kind: kindTitle})
			continue
		}
		emit(line, base)
	}
	return d
}

// noteDate takes a date written in the first line or a heading as the
// document's date.
func (d *document) noteDate(s string, first bool) {
	if !first || !d.Date.IsZero() {
		return
	}
	if t, ok := findDate(s); ok {
		d.Date = t
	}
}

// looksLikeSentenceStart tells "Please note: …" or "We agreed: …" from a
// speaker label: labels are names, not common words.
func looksLikeSentenceStart(label string) bool {
	w := strings.ToLower(strings.Fields(label)[0])
	return commonWords[w] || actionVerbs[w]
}

func stripRole(s string) string {
	if i := strings.Index(s, "("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// isTitle: a first line without closing punctuation and at most twelve
// words is the document's title.
func isTitle(line string) bool {
	last, _ := utf8.DecodeLastRuneInString(line)
	return !strings.ContainsRune(".!?", last) && len(strings.Fields(line)) <= 12
}

// findDate reads an ISO date (2026-03-04) or an English one ("March 4,
// 2026", "4 March 2026") in s.
func findDate(s string) (time.Time, bool) {
	if m := isoDate.FindString(s); m != "" {
		if t, err := time.Parse(time.DateOnly, m); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"January 2, 2006", "January 2 2006", "2 January 2006", "Jan 2, 2006", "2 Jan 2006", "Monday, January 2, 2006"} {
		words := strings.Fields(strings.NewReplacer(",", ", ").Replace(s))
		n := len(strings.Fields(layout))
		for i := 0; i+n <= len(words); i++ {
			cand := strings.TrimRight(strings.Join(words[i:i+n], " "), ".;")
			cand = strings.ReplaceAll(cand, " ,", ",")
			if t, err := time.Parse(layout, cand); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// Abbreviations whose period does not end a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true, "vs": true,
	"etc": true, "e.g": true, "i.e": true, "inc": true, "ltd": true, "co": true, "corp": true, "approx": true,
	"no": true, "nr": true, "fig": true, "dept": true, "est": true, "jan": true, "feb": true, "mar": true, "apr": true,
	"jun": true, "jul": true, "aug": true, "sep": true, "sept": true, "oct": true, "nov": true, "dec": true, "u.s": true,
}

// splitSentences splits prose at ., ! and ? followed by a space and a
// capital letter, digit, quote or @ — except after abbreviations and
// initials.
func splitSentences(s string) []string {
	var out []string
	start := 0
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		j := i + 1
		for j < len(runes) && strings.ContainsRune(".!?\"'”’)]", runes[j]) {
			j++
		}
		if j >= len(runes) || !unicode.IsSpace(runes[j]) {
			continue
		}
		k := j
		for k < len(runes) && unicode.IsSpace(runes[k]) {
			k++
		}
		if k >= len(runes) {
			break
		}
		next := runes[k]
		if !(unicode.IsUpper(next) || unicode.IsDigit(next) || strings.ContainsRune("\"'“‘(@[", next)) {
			continue
		}
		if r == '.' {
			w := lastWord(runes[start:i])
			if abbreviations[strings.ToLower(w)] || (utf8.RuneCountInString(w) == 1 && unicode.IsUpper([]rune(w)[0])) {
				continue
			}
		}
		if seg := strings.TrimSpace(string(runes[start:j])); seg != "" {
			out = append(out, seg)
		}
		start = k
		i = k - 1
	}
	if seg := strings.TrimSpace(string(runes[start:])); seg != "" {
		out = append(out, seg)
	}
	return out
}

func lastWord(rs []rune) string {
	end := len(rs)
	i := end
	for i > 0 && (unicode.IsLetter(rs[i-1]) || rs[i-1] == '.') {
		i--
	}
	return strings.Trim(string(rs[i:end]), ".")
}

// words lowercases s into its words (letters, digits, apostrophes inside).
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’')
	})
}

// TextDates reports the date a text states for itself ("Date:" line, a
// date in its first line; zero when none) and whether any of its entries
// is dated ("[2026-03-02 14:05] …" headers). Relative due dates in an
// undated text count from the job's time, so such a job's cache key
// includes that day.
func TextDates(text string) (own time.Time, dated bool) {
	d := parseDocument(text)
	if !d.Date.IsZero() {
		return d.Date, true
	}
	for _, u := range d.Units {
		if !u.Date.IsZero() {
			return time.Time{}, true
		}
	}
	return time.Time{}, false
}
