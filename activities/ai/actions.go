package ai

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/business-suite/suite/models"
)

// Rule-based action items. A sentence is an action item when
//   - it stands under an action label: "TODO: …", "Action: …", a bullet
//     under "Action items:" or "Next steps:";
//   - it is a request: "Please …", "Can/Could/Would you …", or an
//     imperative (it opens with an action verb: "Send the logs.");
//   - it is a commitment: "I will …", "I'll …", "We need to …", "Let's …",
//     "Priya will …", "Priya to …", "@tom should …".
//
// Greetings, "let me know if…" boilerplate, negations ("we will not") and
// statements of being ("we will be closed") are not.
//
// The owner is the @mention, else the person a commitment or vocative
// names ("Maria, please…", "Priya to…"), else the label of the bullet
// ("- Priya: send…"), else the speaker for "I …"; "we" has no single owner.
// Names are matched to the people the document introduces (attendees,
// speakers), so "@priya" becomes "Priya Patel".

var (
	boilerplate = regexp.MustCompile(`(?i)\b(let'?s (start|begin|move on|go through|recap|wrap up|get started|look at)|let (me|us) know|feel free|(don't|do not) hesitate|reach out if|hope (this|that) helps|if you have any (other )?questions|please find attached|please see (below|attached)|please note|thanks in advance|looking forward)\b`)
	negation    = regexp.MustCompile(`(?i)\b(will not|won't|wont|shall not|do not need|don't need|no need to|never|not going to|cannot|can't)\b`)
	todoInline  = regexp.MustCompile(`(?i)\b(?:todo\b\s*:?|action items?\s*:|action\s*:)`)
	mention     = regexp.MustCompile(`(?:^|[^\w@])@([\p{L}\d][\p{L}\d._-]*[\p{L}\d]|[\p{L}\d])`)
	requestForm = regexp.MustCompile(`(?i)^(?:can|could|would|will) (?:you|someone|somebody)(?: please)? (\S+)`)
	fillers     = toSet("also", "and", "then", "so", "ok", "okay", "next", "finally", "first", "lastly", "additionally", "meanwhile", "now")
	adverbs     = toSet("also", "then", "first", "personally", "quickly", "definitely", "certainly", "just", "now", "still", "soon",
		"immediately", "gladly", "happily", "please", "asap", "again", "promptly", "urgently", "directly", "actually", "really")
	// Words after "will"/"to" that describe rather than commit.
	nonActions = toSet("be", "been", "being", "have", "has", "had", "not", "never", "probably", "likely", "maybe", "perhaps",
		"always", "only", "need", "like", "love", "hate", "see", "seem", "happen", "depend", "know", "think", "feel", "hear", "want")
	modals = [][]string{
		{"will"}, {"shall"}, {"to"}, {"should"}, {"must"}, {"can"}, {"need", "to"}, {"needs", "to"}, {"has", "to"}, {"have", "to"},
		{"is", "going", "to"}, {"are", "going", "to"}, {"am", "going", "to"}, {"is", "to"}, {"are", "to"}, {"will", "need", "to"},
		{"is", "responsible", "for"}, {"owns"},
	}
	// A contraction folds the modal into the subject.
	contracted = map[string][]string{"i'll": {"i", "will"}, "we'll": {"we", "will"}, "i’ll": {"i", "will"}, "we’ll": {"we", "will"},
		"let's": {"let", "us"}, "let’s": {"let", "us"}, "i'm": {"i", "am"}, "i’m": {"i", "am"}, "we're": {"we", "are"}, "we’re": {"we", "are"}}
	// commonWords are capitalised at a sentence start but are not names.
	commonWords = toSet("i", "we", "you", "they", "he", "she", "it", "the", "a", "an", "this", "that", "these", "those", "please",
		"our", "my", "your", "their", "his", "her", "its", "let's", "let", "also", "then", "so", "and", "but", "if", "when", "all",
		"everyone", "everybody", "someone", "somebody", "nobody", "team", "thanks", "thank", "hi", "hello", "hey", "dear", "yes", "no",
		"ok", "okay", "after", "before", "once", "since", "because", "while", "as", "at", "on", "in", "by", "for", "from", "with",
		"there", "here", "what", "which", "who", "why", "how", "where", "today", "tomorrow", "next", "last", "both", "each", "some",
		"any", "customer", "customers", "agent", "support", "finally", "meanwhile", "note", "update", "good", "great", "sure",
		"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april",
		"may", "june", "july", "august", "september", "october", "november", "december", "regarding", "unfortunately", "however")
	actionVerbs = toSet(
		"add", "adjust", "align", "analyse", "analyze", "announce", "apply", "approve", "archive", "arrange", "ask", "assign",
		"attach", "audit", "back", "bill", "book", "bring", "build", "calculate", "call", "cancel", "change", "check", "choose",
		"circulate", "clean", "clear", "close", "collect", "compare", "compile", "complete", "configure", "confirm", "connect",
		"contact", "coordinate", "create", "decide", "define", "delete", "deliver", "demo", "deploy", "design", "disable",
		"discuss", "document", "double-check", "download", "draft", "drop", "email", "e-mail", "enable", "escalate", "estimate",
		"evaluate", "expand", "explore", "extend", "file", "fill", "finalise", "finalize", "find", "finish", "fix", "follow",
		"forward", "gather", "get", "give", "go", "hand", "help", "hire", "implement", "improve", "inform", "install", "interview",
		"introduce", "investigate", "invite", "invoice", "issue", "keep", "launch", "lead", "list", "log", "look", "make", "mark",
		"measure", "meet", "merge", "message", "migrate", "monitor", "move", "negotiate", "notify", "onboard", "open", "order",
		"organise", "organize", "outline", "pay", "patch", "pick", "ping", "plan", "plug", "post", "power", "prepare", "present",
		"print", "prioritise", "prioritize", "provide", "publish", "push", "put", "quote", "raise", "reach", "reassign", "reboot",
		"recheck", "record", "reduce", "refactor", "refund", "register", "release", "remind", "remove", "renew", "reopen", "replace",
		"reply", "report", "request", "rerun", "re-run", "research", "reset", "resolve", "respond", "restart", "restore", "resume",
		"return", "review", "revise", "rotate", "run", "schedule", "select", "send", "set", "share", "ship", "sign", "start", "stop",
		"submit", "summarise", "summarize", "switch", "sync", "take", "talk", "tell", "test", "track", "train", "try", "turn",
		"unplug", "update", "upgrade", "upload", "validate", "verify", "visit", "write",
	)
	// Words that open sentences as nouns too ("Review meeting went
	// well"): imperative only when an object follows ("Review the draft").
	ambiguousImperatives = toSet("back", "file", "issue", "lead", "list", "log", "mark", "plan", "power", "quote", "record", "report",
		"return", "review", "set", "start", "stop", "test", "update", "back-up", "order", "post", "call", "email", "message")
)

// extractActionItems applies the rules to text; relative due dates count
// from each entry's date, else the document's, else ref.
func extractActionItems(text string, ref time.Time) []models.AIActionItem {
	doc := parseDocument(text)
	if !doc.Date.IsZero() {
		ref = doc.Date
	}
	var items []models.AIActionItem
	seen := map[string]bool{}
	for _, u := range doc.Units {
		if u.Kind != kindSentence {
			continue
		}
		owner, ok := actionOwner(u, doc.People)
		if !ok {
			continue
		}
		text := strings.TrimSpace(u.Text)
		if m := todoInline.FindStringIndex(text); m != nil && m[0] == 0 {
			text = strings.TrimSpace(text[m[1]:])
		}
		text = strings.TrimRight(text, ".;")
		key := strings.Join(words(text), " ")
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		item := models.AIActionItem{Text: text}
		if owner != "" {
			item.Owner = &owner
		}
		at := ref
		if !u.Date.IsZero() {
			at = u.Date
		}
		if d := dueDate(text, at); d != "" {
			item.DueDate = &d
		}
		items = append(items, item)
	}
	return items
}

// actionOwner tells whether u is an action item and who owns it ("" when
// nobody in particular).
func actionOwner(u unit, people []string) (string, bool) {
	s := strings.TrimSpace(u.Text)
	if s == "" || boilerplate.MatchString(s) || (negation.MatchString(s) && !u.Action) {
		return "", false
	}
	todo := todoInline.FindStringIndex(s)
	explicit := u.Action || todo != nil
	if todo != nil {
		s = strings.TrimSpace(s[todo[1]:])
	}
	mentioned := ""
	if m := mention.FindStringSubmatch(s); m != nil {
		mentioned = resolvePerson(m[1], people)
	}
	owner, ok := classify(s, u, people)
	if !ok && !explicit && !(mentioned != "" && strings.Contains(strings.ToLower(s), "please")) {
		return "", false
	}
	if mentioned != "" {
		owner = mentioned
	}
	// A labelled bullet under an action heading ("- Priya: send…"), or a
	// speaker's own TODO, is the labeller's.
	if owner == "" && u.Speaker != "" && (u.Bullet && u.Action || todo != nil) {
		owner = resolvePerson(stripRole(u.Speaker), people)
	}
	return owner, true
}

// classify applies the request, imperative and commitment rules.
func classify(s string, u unit, people []string) (string, bool) {
	toks := tokens(s)
	for len(toks) > 0 && fillers[strings.ToLower(strings.TrimRight(toks[0], ","))] {
		toks = toks[1:]
	}
	if len(toks) == 0 {
		return "", false
	}
	question := strings.HasSuffix(s, "?")
	owner := ""
	// A vocative: "Maria, please send…", "@tom, can you…".
	if strings.HasSuffix(toks[0], ",") && len(toks) > 1 {
		if name, ok := personToken(strings.TrimSuffix(toks[0], ","), people); ok {
			owner, toks = name, toks[1:]
		}
	}
	lower := make([]string, len(toks))
	for i, t := range toks {
		lower[i] = strings.ToLower(strings.Trim(t, ",:;.!?\"'()"))
	}
	if m := requestForm.FindStringSubmatch(strings.Join(lower, " ")); m != nil && !nonActions[m[1]] {
		return owner, true
	}
	switch lower[0] {
	case "please", "pls", "kindly":
		return owner, len(lower) > 1 && !nonActions[lower[1]]
	}
	if actionVerbs[lower[0]] && !question && !strings.HasSuffix(toks[0], ":") &&
		(!ambiguousImperatives[lower[0]] || len(toks) > 1 && objectStart(toks[1])) {
		return owner, true
	}
	if question {
		return "", false
	}
	// Commitments: subject, modal, (adverbs), verb.
	subject, rest := lower[0], lower[1:]
	if c, ok := contracted[subject]; ok {
		subject, rest = c[0], append([]string{c[1]}, rest...)
	}
	who := ""
	switch subject {
	case "i":
		who = stripRole(u.Speaker)
		if who != "" {
			who = resolvePerson(who, people)
		}
	case "we", "let":
		if subject == "let" && (len(rest) == 0 || rest[0] != "us") {
			return "", false
		}
		if subject == "let" {
			rest = rest[1:]
			return owner, len(rest) > 0 && !nonActions[rest[0]]
		}
	default:
		name, n, ok := leadingName(toks, people)
		if !ok {
			return "", false
		}
		who, rest = name, lower[n:]
	}
	for _, m := range modals {
		if len(rest) < len(m) || !equal(rest[:len(m)], m) {
			continue
		}
		after := rest[len(m):]
		for len(after) > 0 && adverbs[after[0]] {
			after = after[1:]
		}
		if len(after) == 0 || nonActions[after[0]] && !readyPhrase(after) {
			return "", false
		}
		if owner == "" {
			owner = who
		}
		return owner, true
	}
	return "", false
}

// objectStart tells whether tok can begin the object of an imperative: a
// determiner or pronoun, a name, an @mention.
func objectStart(tok string) bool {
	r, _ := utf8.DecodeRuneInString(tok)
	return determiners[strings.ToLower(strings.Trim(tok, ",.;:"))] || unicode.IsUpper(r) || r == '@'
}

var determiners = toSet("the", "a", "an", "all", "our", "your", "my", "their", "this", "that", "these", "those", "it", "them",
	"him", "her", "me", "us", "up", "out", "back", "in", "on", "with", "to", "everyone", "each", "every", "both", "any", "some")

// readyPhrase accepts "have it ready/done" as a commitment.
func readyPhrase(after []string) bool {
	if after[0] != "have" {
		return false
	}
	for _, w := range after[1:min(len(after), 6)] {
		if w == "ready" || w == "done" || w == "finished" || w == "completed" || w == "sent" {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func tokens(s string) []string { return strings.Fields(s) }

// leadingName reads a name of one or two words (or an @mention) at the
// start of toks: known people by first or full name, or capitalised words
// that are not common words or acronyms.
func leadingName(toks []string, people []string) (string, int, bool) {
	first := strings.Trim(toks[0], ",:;")
	if strings.HasPrefix(first, "@") {
		return resolvePerson(strings.TrimPrefix(first, "@"), people), 1, true
	}
	if len(toks) > 1 {
		two := first + " " + strings.Trim(toks[1], ",:;")
		if p := matchPerson(two, people); p != "" {
			return p, 2, true
		}
		if nameLike(first) && nameLike(strings.Trim(toks[1], ",:;")) && !strings.HasSuffix(toks[0], ",") {
			return two, 2, true
		}
	}
	if name, ok := personToken(first, people); ok {
		return name, 1, true
	}
	return "", 0, false
}

func personToken(tok string, people []string) (string, bool) {
	if strings.HasPrefix(tok, "@") {
		return resolvePerson(strings.TrimPrefix(tok, "@"), people), true
	}
	if p := matchPerson(tok, people); p != "" {
		return p, true
	}
	if nameLike(tok) {
		return tok, true
	}
	return "", false
}

// nameLike: capitalised, not all capitals (acronyms), not a common word
// or verb.
func nameLike(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) || utf8.RuneCountInString(w) < 2 {
		return false
	}
	if strings.ToUpper(w) == w {
		return false
	}
	lw := strings.ToLower(w)
	return !commonWords[lw] && !actionVerbs[lw] && !strings.ContainsAny(w, "0123456789")
}

// matchPerson finds name among people by full name, first name or
// first.last handle (case-insensitive), preferring the fullest name; ""
// when none.
func matchPerson(name string, people []string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	best := ""
	for _, p := range people {
		lp := strings.ToLower(p)
		f := strings.Fields(lp)
		if lp == n || (len(f) > 0 && f[0] == n) || strings.Join(f, ".") == n {
			if len(p) > len(best) {
				best = p
			}
		}
	}
	return best
}

// resolvePerson maps a name or @handle to a known person, or keeps it.
func resolvePerson(name string, people []string) string {
	name = strings.TrimSpace(strings.TrimPrefix(name, "@"))
	if p := matchPerson(name, people); p != "" {
		return p
	}
	return name
}
