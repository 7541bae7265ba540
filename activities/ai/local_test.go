package ai_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/business-suite/suite/activities/ai"
	"github.com/business-suite/suite/models"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func summarize(t *testing.T, text, length string) string {
	t.Helper()
	out, err := ai.NewLocal().Summarize(context.Background(), ai.SummarizeRequest{Text: text, Length: length})
	if err != nil {
		t.Fatal(err)
	}
	if out.Usage.Calls != 1 || out.Usage.PromptTokens != int64(ai.CountTokens(text)) || out.Usage.CompletionTokens != int64(ai.CountTokens(out.Text)) {
		t.Fatalf("usage %+v", out.Usage)
	}
	return out.Text
}

func sentenceCount(s string) int {
	return strings.Count(s, ". ") + strings.Count(s, "? ") + 1
}

// The summary of a support thread states the problem, its cause and where
// things stand, and leaves out greetings and courtesies.
func TestLocalSummaryOfATicketThreadKeepsWhatMatters(t *testing.T) {
	thread := readTestdata(t, "ticket_thread.txt")
	medium := summarize(t, thread, models.AILengthMedium)
	for _, want := range []string{
		"none of our invoices sync to QuickBooks anymore",                     // the problem
		"the 2.3 migration dropped the refresh token",                         // the cause
		"338 of 340 invoices synced",                                          // where it stands
		"The two remaining invoices fail because their customer was archived", // what is left
	} {
		if !strings.Contains(medium, want) {
			t.Errorf("medium summary lacks %q:\n%s", want, medium)
		}
	}
	for _, noise := range []string{"Hi team", "Thanks", "Best regards", "Thank you for the detailed report", "Attached is the log", "Status: open"} {
		if strings.Contains(medium, noise) {
			t.Errorf("medium summary holds %q:\n%s", noise, medium)
		}
	}
	if !strings.HasPrefix(medium, "Maria Lopez: Since we installed version 2.3") {
		t.Errorf("sentences are not attributed or not in document order:\n%s", medium)
	}
	short := summarize(t, thread, models.AILengthShort)
	long := summarize(t, thread, models.AILengthLong)
	if !strings.Contains(short, "none of our invoices sync") || sentenceCount(short) > 3 {
		t.Errorf("short summary:\n%s", short)
	}
	if !(len(short) < len(medium) && len(medium) < len(long)) {
		t.Errorf("lengths do not grow: %d, %d, %d", len(short), len(medium), len(long))
	}
	if again := summarize(t, thread, models.AILengthMedium); again != medium {
		t.Error("the local summary is not deterministic")
	}
}

func TestLocalSummaryOfAMeetingKeepsDecisionsAndRisks(t *testing.T) {
	meeting := readTestdata(t, "meeting_transcript.txt")
	medium := summarize(t, meeting, models.AILengthMedium)
	for _, want := range []string{
		"we decided to move the public launch from March 10 to March 17",
		"Checkout fails for customers in Brazil because the tax service rejects their postal codes",
		"212 active teams",
	} {
		if !strings.Contains(medium, want) {
			t.Errorf("medium summary lacks %q:\n%s", want, medium)
		}
	}
	for _, noise := range []string{"Attendees", "Weekly product sync", "Good.", "Let's start"} {
		if strings.Contains(medium, noise) {
			t.Errorf("summary holds %q:\n%s", noise, medium)
		}
	}
}

func TestLengthsAreSentenceCounts(t *testing.T) {
	cases := []struct {
		length string
		n      int
		want   int
	}{
		{models.AILengthShort, 5, 1}, {models.AILengthShort, 25, 3}, {models.AILengthShort, 100, 3},
		{models.AILengthMedium, 2, 2}, {models.AILengthMedium, 10, 3}, {models.AILengthMedium, 25, 5}, {models.AILengthMedium, 100, 6},
		{models.AILengthLong, 10, 5}, {models.AILengthLong, 20, 7}, {models.AILengthLong, 100, 12},
	}
	for _, c := range cases {
		if got := ai.LengthOf(c.length).Sentences(c.n); got != c.want {
			t.Errorf("%s of %d sentences: %d, want %d", c.length, c.n, got, c.want)
		}
	}
}

type wantItem struct {
	text, owner, due string
}

func checkItems(t *testing.T, got []models.AIActionItem, want []wantItem, notWanted []string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, it := range got {
			if !strings.Contains(it.Text, w.text) {
				continue
			}
			found = true
			if owner := deref(it.Owner); owner != w.owner {
				t.Errorf("%q: owner %q, want %q", w.text, owner, w.owner)
			}
			if due := deref(it.DueDate); due != w.due {
				t.Errorf("%q: due %q, want %q", w.text, due, w.due)
			}
		}
		if !found {
			t.Errorf("no action item %q among %v", w.text, texts(got))
		}
	}
	for _, n := range notWanted {
		for _, it := range got {
			if strings.Contains(it.Text, n) {
				t.Errorf("%q is not an action item", it.Text)
			}
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func texts(items []models.AIActionItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Text)
	}
	return out
}

func actionItems(t *testing.T, text string, ref time.Time) []models.AIActionItem {
	t.Helper()
	out, err := ai.NewLocal().ActionItems(context.Background(), ai.ActionItemsRequest{Text: text, Reference: ref})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// Due dates count from the message they were written in: "tomorrow" in
// Dana's reply of March 2 is March 3, "by end of day" on March 3 is March 3.
func TestLocalActionItemsOfATicketThread(t *testing.T) {
	items := actionItems(t, readTestdata(t, "ticket_thread.txt"), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	checkItems(t, items, []wantItem{
		{"Could you send me the sync log file", "", ""},
		{"@raj please ship the token migration hotfix by Wednesday", "raj", "2026-03-04"},
		{"Please reconnect QuickBooks under Settings > Integrations today", "", "2026-03-02"},
		{"I will check tomorrow that all 340 invoices have synced", "Dana Smith", "2026-03-03"},
		{"We will also credit your account", "", ""},
		{"I'll send you the list of both invoices by end of day", "Dana Smith", "2026-03-03"},
		{"Please restore the archived customer in QuickBooks", "", ""},
	}, []string{"Hi team", "Thank you", "Attached is the log", "Root cause found", "please do not delete", "Our controller needs"})
	if len(items) != 7 {
		t.Errorf("%d items, want 7: %q", len(items), texts(items))
	}
}

// A meeting dated 2026-03-04 (a Wednesday): owners from names, @mentions,
// "I" with the speaker and labelled bullets, matched to the attendees.
func TestLocalActionItemsOfAMeeting(t *testing.T) {
	items := actionItems(t, readTestdata(t, "meeting_transcript.txt"), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	checkItems(t, items, []wantItem{
		{"Omar, please update the newsletter and the landing page by Friday", "Omar Haddad", "2026-03-06"},
		{"I will add a fallback that skips postal code validation", "Tom Becker", ""},
		{"I'll have it ready by Thursday", "Tom Becker", "2026-03-05"},
		{"I can write the release notes", "Lena Fischer", ""},
		{"Lena to prepare the customer email about the new date before 2026-03-09", "Lena Fischer", "2026-03-09"},
		{"@tom please check whether we can run exports on two workers next week", "Tom Becker", "2026-03-13"},
		{"book the launch retro for March 18", "Priya Patel", "2026-03-18"},
		{"share the updated launch plan with the leadership team tomorrow", "Priya Patel", "2026-03-05"},
		{"Lena Fischer will confirm the vendor's fix date", "Lena Fischer", ""},
	}, []string{"Let's start", "They will release a fix", "we decided", "Marketing needs", "I talked", "TODO"})
	if len(items) != 9 {
		t.Errorf("%d items, want 9: %q", len(items), texts(items))
	}
}

// Without dated entries, relative dates count from the reference (the
// job's time). 2026-03-04 is a Wednesday.
func TestDueDates(t *testing.T) {
	ref := time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC)
	cases := map[string]string{
		"Please send the report by Friday.":              "2026-03-06",
		"Please send the report on Wednesday.":           "2026-03-11",
		"Please file the form before 2026-12-01.":        "2026-12-01",
		"Please call the vendor tomorrow.":               "2026-03-05",
		"Please call the vendor the day after tomorrow.": "2026-03-06",
		"Please fix the build today.":                    "2026-03-04",
		"Please fix the build by EOD.":                   "2026-03-04",
		"Please review the plan next week.":              "2026-03-13",
		"Please review the plan by the end of the week.": "2026-03-06",
		"Please close the books by end of month.":        "2026-03-31",
		"Please renew the contract next month.":          "2026-04-30",
		"Please ship it in 3 days.":                      "2026-03-07",
		"Please ship it within two weeks.":               "2026-03-18",
		"Please book the venue for March 18.":            "2026-03-18",
		"Please book the venue for the 2nd of February.": "2027-02-02",
		"Please send the deck.":                          "",
		"Please check whether we may need the deck.":     "",
	}
	for sentence, want := range cases {
		items := actionItems(t, sentence, ref)
		if len(items) != 1 {
			t.Errorf("%q: %d items", sentence, len(items))
			continue
		}
		if got := deref(items[0].DueDate); got != want {
			t.Errorf("%q: due %q, want %q", sentence, got, want)
		}
	}
}

func TestActionRules(t *testing.T) {
	ref := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	text := `Notes from the call
Present: Ana Costa, Ben Ode

Send the signed contract to legal.
We will not change the price.
We will be closed on Monday.
Let me know if you have questions.
The review meeting went well.
Review the draft before Friday.
Ben will have the numbers ready by Monday.
Can someone restart the staging server?
What time is it?
Action: @ana.costa renew the SSL certificate by 2026-04-01
TODO update the wiki
## Next steps
- Ana: collect feedback from the pilot users
- migrate the old tickets`
	items := actionItems(t, text, ref)
	checkItems(t, items, []wantItem{
		{"Send the signed contract to legal", "", ""},
		{"Review the draft before Friday", "", "2026-03-06"},
		{"Ben will have the numbers ready by Monday", "Ben Ode", "2026-03-09"},
		{"Can someone restart the staging server?", "", ""},
		{"@ana.costa renew the SSL certificate by 2026-04-01", "Ana Costa", "2026-04-01"},
		{"collect feedback from the pilot users", "Ana Costa", ""},
		{"migrate the old tickets", "", ""},
		{"update the wiki", "", ""},
	}, []string{"We will not", "closed on Monday", "Let me know", "went well", "What time"})
	if len(items) != 8 {
		t.Errorf("%d items: %q", len(items), texts(items))
	}
}
